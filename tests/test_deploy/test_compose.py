"""deploy/docker-compose.yml: valid against the Compose Specification, and coherent.

There is no Docker engine in CI, so the stack is not started; instead the file is
validated against the published schema (vendored in deploy/schemas/) with check-jsonschema,
the proxy config with haproxy itself, and every cross-reference (services, mounts,
settings, ports, topics, the migration command) is checked here.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from core.settings import Settings
from schemas.sql import load_migrations, load_views
from schemas.topics import all_topics
from tests.test_deploy.common import (
    COMPOSE,
    DEPLOY,
    MIGRATIONS,
    PROMETHEUS_CONFIG,
    ROOT,
    VIEWS,
    compose,
    load_yaml,
    python_module,
    run,
    tool,
)

SCHEMA = DEPLOY / "schemas" / "compose-spec.json"
SETTINGS = set(Settings.model_fields)


def validate_compose(path: Path) -> Any:
    return run([*python_module("check_jsonschema"), "--schemafile", str(SCHEMA), str(path)])


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]


def env(service: dict[str, Any]) -> dict[str, str]:
    value = service.get("environment", {})
    if isinstance(value, list):
        value = dict(item.split("=", 1) for item in value)
    return {k: str(v) for k, v in value.items()}


def default(value: str) -> str:
    """The value of a ${VAR:-default} interpolation as compose resolves it without .env."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


# ----------------------------------------------------------------------------- schema


def test_compose_file_is_valid_against_the_compose_specification() -> None:
    result = validate_compose(COMPOSE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok -- validation done" in result.stdout


def test_the_validator_rejects_an_invalid_compose_file(tmp_path: Path) -> None:
    doc = compose()
    doc["services"]["worker"]["depends_on"]["migrate"]["condition"] = "service_finished"
    doc["services"]["ingest"]["restart_policy"] = "always"  # not a service key
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(yaml.safe_dump(doc))
    result = validate_compose(broken)
    assert result.returncode != 0
    assert "restart_policy" in result.stdout + result.stderr


def test_vendored_schema_is_the_recorded_one() -> None:
    readme = (DEPLOY / "schemas" / "README.md").read_text()
    digest = hashlib.sha256(SCHEMA.read_bytes()).hexdigest()
    assert digest in readme, "deploy/schemas/compose-spec.json changed: record its origin and sha256"


# ----------------------------------------------------------------------------- wiring


def test_dependencies_exist_and_bind_mounts_resolve() -> None:
    svcs = services()
    for name, svc in svcs.items():
        for dep in svc.get("depends_on", {}):
            assert dep in svcs, f"{name} depends on unknown {dep}"
        for volume in svc.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (COMPOSE.parent / source).exists(), f"{name}: {source} does not exist"
            else:
                assert source in compose()["volumes"], f"{name}: undeclared volume {source}"


def test_auditstream_variables_are_real_settings() -> None:
    for name, svc in services().items():
        for key in env(svc):
            if key.startswith("AUDITSTREAM_"):
                assert key.removeprefix("AUDITSTREAM_").lower() in SETTINGS, f"{name}: {key} is not a setting"


def test_services_point_at_the_kafka_and_clickhouse_of_the_stack() -> None:
    svcs = services()
    brokers = sorted(n for n in svcs if re.fullmatch(r"kafka-\d", n))
    assert len(brokers) == 3
    for name in ("migrate", "ingest", "worker"):
        values = env(svcs[name])
        assert sorted(h.split(":")[0] for h in values["AUDITSTREAM_KAFKA_BOOTSTRAP"].split(",")) == brokers
        url = urlparse(default(values["AUDITSTREAM_CLICKHOUSE_URL"]))
        assert url.scheme == "clickhouse" and url.hostname == "clickhouse" and url.port == 9000
        assert url.username == env(svcs["clickhouse"])["CLICKHOUSE_USER"]
        assert url.password == default(env(svcs["clickhouse"])["CLICKHOUSE_PASSWORD"])


def test_kafka_is_a_three_node_kraft_quorum_with_replicated_topics() -> None:
    svcs = services()
    ids, advertised = set(), set()
    for n in (1, 2, 3):
        values = env(svcs[f"kafka-{n}"])
        ids.add(values["KAFKA_NODE_ID"])
        advertised.add(values["KAFKA_ADVERTISED_LISTENERS"])
        assert values["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"
        assert (
            values["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "3" and values["KAFKA_MIN_INSYNC_REPLICAS"] == "2"
        )
        assert values["KAFKA_LOG_DIRS"] in {v.split(":")[1] for v in svcs[f"kafka-{n}"]["volumes"]}
        assert int(values["KAFKA_LOG_RETENTION_HOURS"]) >= 24 * Settings().dedup_horizon_days
    assert ids == {"1", "2", "3"} and len(advertised) == 3


def test_topics_are_created_with_the_partitions_the_workers_expect() -> None:
    svcs = services()
    job = svcs["kafka-topics"]
    script = job["command"][0]
    assert sorted(re.findall(r"auditstream\.\w+", script)) == sorted(all_topics("auditstream"))
    assert "--replication-factor 3" in script and "min.insync.replicas=2" in script
    partitions = default(env(job)["PARTITIONS"])
    assert partitions == default(env(svcs["worker"])["AUDITSTREAM_PARTITIONS"])
    assert partitions == default(env(svcs["ingest"])["AUDITSTREAM_PARTITIONS"])
    assert svcs["worker"]["deploy"]["replicas"] <= int(partitions)
    for name in ("ingest", "worker"):
        assert svcs[name]["depends_on"]["kafka-topics"]["condition"] == "service_completed_successfully"


def test_two_ingest_replicas_behind_the_proxy_and_two_workers() -> None:
    svcs = services()
    assert svcs["ingest"]["deploy"]["replicas"] == 2
    assert svcs["worker"]["deploy"]["replicas"] == 2
    assert "ports" not in svcs["ingest"], "replicas cannot share a host port; the proxy publishes 8080"
    assert svcs["proxy"]["ports"] == ["8080:8080"]
    assert svcs["ingest"]["command"] == ["ingest", "--host", "0.0.0.0", "--port", "8080"]
    assert svcs["worker"]["command"] == ["worker"]


def test_haproxy_config_is_valid_and_balances_the_ingest_service() -> None:
    config = DEPLOY / "haproxy" / "haproxy.cfg"
    result = run([tool("haproxy"), "-c", "-f", str(config)])
    assert result.returncode == 0, result.stdout + result.stderr
    text = config.read_text()
    assert re.search(r"server-template ingest \d+ ingest:8080 check resolvers docker", text)
    assert "http-check send meth GET uri /readyz" in text
    mounts = dict(m.split(":")[:2] for m in services()["proxy"]["volumes"])
    assert mounts["./haproxy/haproxy.cfg"] == "/usr/local/etc/haproxy/haproxy.cfg"


def test_prometheus_scrapes_every_replica_of_ingest_and_worker() -> None:
    jobs = {j["job_name"]: j for j in load_yaml(PROMETHEUS_CONFIG)["scrape_configs"]}
    ingest_sd = jobs["auditstream-ingest"]["dns_sd_configs"][0]
    worker_sd = jobs["auditstream-worker"]["dns_sd_configs"][0]
    assert ingest_sd["names"] == ["ingest"] and ingest_sd["port"] == 8080
    assert worker_sd["names"] == ["worker"]
    assert worker_sd["port"] == int(env(services()["worker"])["AUDITSTREAM_WORKER_METRICS_PORT"])
    assert jobs["haproxy"]["static_configs"][0]["targets"] == ["proxy:8404"]


# ----------------------------------------------------------------------------- one DDL


def test_migrate_service_runs_the_project_migrations_from_the_project_image() -> None:
    svcs = services()
    migrate = svcs["migrate"]
    assert migrate["command"] == ["db", "migrate"]
    assert migrate["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert migrate["depends_on"]["clickhouse"]["condition"] == "service_healthy"
    for name in ("ingest", "worker"):
        assert svcs[name]["image"] == migrate["image"], "every role runs the image migrate was built as"
        assert svcs[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "COPY schemas schemas" in dockerfile and "pip install --no-cache-dir ." in dockerfile
    assert 'ENTRYPOINT ["auditstream"]' in dockerfile


def test_the_installed_package_ships_exactly_the_migration_and_view_files() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"clickhouse/migrations/*.sql"' in pyproject and '"clickhouse/views/*.sql"' in pyproject
    assert [m.name for m in load_migrations()] == sorted(p.name for p in MIGRATIONS.glob("*.sql"))
    assert sorted(f"{v.name}.sql" for v in load_views()) == sorted(p.name for p in VIEWS.glob("*.sql"))


def test_db_migrate_applies_every_migration(tmp_path: Path) -> None:
    """The migrate service's command, run here on embedded chDB instead of the server."""
    environ = {**os.environ, "AUDITSTREAM_DATA_DIR": str(tmp_path), "AUDITSTREAM_CLICKHOUSE_URL": ""}
    command = [
        sys.executable,
        "-c",
        "from auditstream.cli import main; main()",
        *services()["migrate"]["command"],
    ]
    first = run(command, cwd=ROOT, env=environ, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    output = first.stdout + first.stderr  # the CLI reports on its console (stderr)
    applied = re.sub(r"\s+", "", output.split("applied:", 1)[1])
    assert applied.split(",") == [p.name for p in sorted(MIGRATIONS.glob("*.sql"))]
    again = run(command, cwd=ROOT, env=environ, timeout=300)
    assert again.returncode == 0 and "schema is up to date" in again.stdout + again.stderr


def test_no_other_ddl_lives_under_deploy() -> None:
    """The schema has one source: schemas/clickhouse (migrations, views). Nothing in deploy/ can drift."""
    assert list(DEPLOY.rglob("*.sql")) == []
    ddl = re.compile(r"\b(CREATE|ALTER|DROP)\s+(TABLE|VIEW|MATERIALIZED\s+VIEW|DATABASE|DICTIONARY)\b", re.I)
    for path in DEPLOY.rglob("*"):
        if path.is_file() and path.suffix != ".md" and path.parent.name != "schemas":
            assert not ddl.search(path.read_text(errors="replace")), f"DDL in {path.relative_to(ROOT)}"
