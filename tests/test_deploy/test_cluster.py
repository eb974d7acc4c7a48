"""deploy/docker-compose.cluster.yml and deploy/clickhouse/{config.d,nodes,keeper,users.d}: the
two-shard, two-replica example, valid and coherent.

As for docker-compose.yml, there is no Docker engine here: the override and the stack it
makes with the base file (merged as compose merges: maps key by key, a service's volumes by
their path in the container, anything else replaced) are validated against the Compose
Specification, and every cross-reference is checked: the nodes of ``remote_servers`` are the
compose services that mount the cluster config, each with its own macros; Keeper's Raft group
is the keeper services; the profiles carry what the cluster layout needs; and the migrate
service's command, run with ``--dry-run``, prints statements that all parse in ClickHouse's
parser (chDB) and all name the cluster of ``remote_servers``.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml

from schemas.sql import split_statements
from tests.test_deploy.common import DEPLOY, ROOT, compose, load_yaml, python_module, run
from tests.test_deploy.test_compose import default, env, validate_compose

OVERRIDE = DEPLOY / "docker-compose.cluster.yml"
CLICKHOUSE = DEPLOY / "clickhouse"
NODE_CONFIG = "/etc/clickhouse-server/config.d/node.xml"
KEEPER_CONFIG = "/etc/clickhouse-keeper/keeper_config.xml"


def override() -> dict[str, Any]:
    doc = load_yaml(OVERRIDE)
    assert isinstance(doc, dict)
    return doc


def merged() -> dict[str, Any]:
    """The base file with the override on top, as ``docker compose -f ... -f ...`` merges them."""
    stack = copy.deepcopy(compose())
    extra = override()
    for name, service in extra["services"].items():
        into = stack["services"].setdefault(name, {})
        for key, value in service.items():
            if key == "volumes":
                by_target = {v.split(":")[1]: v for v in [*into.get("volumes", []), *value]}
                into[key] = list(by_target.values())
            elif isinstance(value, dict) and isinstance(into.get(key), dict):
                into[key] = {**into[key], **value}
            else:
                into[key] = value
    stack["volumes"] = {**stack["volumes"], **extra["volumes"]}
    return stack


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> source of each volume of ``service``."""
    return {v.split(":")[1]: v.split(":")[0] for v in service.get("volumes", [])}


def xml(path: Path) -> ET.Element:
    return ET.parse(path).getroot()


def child(element: ET.Element, path: str) -> ET.Element:
    found = element.find(path)
    assert found is not None, path
    return found


def cluster() -> tuple[str, list[list[ET.Element]]]:
    """The one cluster of remote_servers: its name and its shards' replicas."""
    (definition,) = list(child(xml(CLICKHOUSE / "config.d" / "cluster.xml"), "remote_servers"))
    return definition.tag, [shard.findall("replica") for shard in definition.findall("shard")]


def nodes() -> dict[str, dict[str, Any]]:
    """The ClickHouse services of the stack that mount the cluster config."""
    target = "/etc/clickhouse-server/config.d/cluster.xml"
    return {n: s for n, s in merged()["services"].items() if target in mounts(s)}


# ----------------------------------------------------------------------------- schema


def test_the_override_and_the_stack_it_makes_are_valid_compose_files(tmp_path: Path) -> None:
    alone = validate_compose(OVERRIDE)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    stack = tmp_path / "stack.yml"
    stack.write_text(yaml.safe_dump(merged()))
    result = validate_compose(stack)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = merged()
    broken["services"]["clickhouse-s2r2"]["depends_on"]["keeper-1"]["condition"] = "service_ready"
    stack.write_text(yaml.safe_dump(broken))
    assert validate_compose(stack).returncode != 0


def test_mounts_resolve_from_deploy_and_volumes_are_declared() -> None:
    """Paths of every file given with -f are relative to the first one's directory, deploy/."""
    stack = merged()
    for name, service in stack["services"].items():
        for dep in service.get("depends_on", {}):
            assert dep in stack["services"], f"{name} depends on unknown {dep}"
        for source in mounts(service).values():
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name}: {source} does not exist"
            else:
                assert source in stack["volumes"], f"{name}: undeclared volume {source}"
    data = [mounts(s)["/var/lib/clickhouse"] for n, s in stack["services"].items() if n in nodes()]
    assert len(set(data)) == len(data) == 4, "each node its own data volume"


# ----------------------------------------------------------------------------- ClickHouse


def test_the_cluster_is_two_shards_of_two_replicas_on_the_compose_nodes() -> None:
    name, shards = cluster()
    assert [len(replicas) for replicas in shards] == [2, 2]
    hosts = [r.findtext("host") for replicas in shards for r in replicas]
    assert sorted(hosts) == sorted(nodes()) and hosts[0] == "clickhouse"
    assert {r.findtext("port") for replicas in shards for r in replicas} == {"9000"}
    definition = child(xml(CLICKHOUSE / "config.d" / "cluster.xml"), f"remote_servers/{name}")
    for shard in definition.findall("shard"):
        assert shard.findtext("internal_replication") == "true", "Replicated tables copy a write themselves"
    secret = definition.find("secret")
    assert secret is not None and secret.get("from_env")
    for service in nodes().values():
        assert secret.get("from_env") in env(service)


def test_each_node_has_its_own_macros_agreeing_with_remote_servers() -> None:
    name, shards = cluster()
    seen = set()
    for number, replicas in enumerate(shards, start=1):
        for replica in replicas:
            host = replica.findtext("host")
            assert host is not None
            service = nodes()[host]
            assert service["hostname"] == host
            config = xml(DEPLOY / mounts(service)[NODE_CONFIG])
            assert config.findtext("interserver_http_host") == host
            macros = {m.tag: m.text for m in child(config, "macros")}
            assert macros == {"cluster": name, "shard": str(number), "replica": host}
            seen.add((macros["shard"], macros["replica"]))
    assert len(seen) == 4
    zookeeper = child(xml(CLICKHOUSE / "config.d" / "cluster.xml"), "zookeeper")
    keeper = xml(CLICKHOUSE / "keeper" / "keeper.xml")
    port = keeper.findtext("keeper_server/tcp_port")
    assert [(n.findtext("host"), n.findtext("port")) for n in zookeeper] == [(s, port) for s in keepers()]


def keepers() -> list[str]:
    return sorted(n for n in merged()["services"] if re.fullmatch(r"keeper-\d", n))


def test_keeper_is_a_three_node_raft_group_of_the_keeper_services() -> None:
    stack = merged()["services"]
    keeper = xml(CLICKHOUSE / "keeper" / "keeper.xml")
    servers = keeper.findall("keeper_server/raft_configuration/server")
    assert [(s.findtext("id"), s.findtext("hostname")) for s in servers] == [
        (str(i), f"keeper-{i}") for i in (1, 2, 3)
    ]
    server_id = child(keeper, "keeper_server/server_id")
    ids = []
    for name in keepers():
        service = stack[name]
        assert service["hostname"] == name
        assert mounts(service)[KEEPER_CONFIG] == "./clickhouse/keeper/keeper.xml"
        ids.append(env(service)[server_id.get("from_env", "")])
    assert ids == ["1", "2", "3"]
    for name, service in nodes().items():
        assert {k: v["condition"] for k, v in service["depends_on"].items()} == dict.fromkeys(
            keepers(), "service_healthy"
        ), name


def test_every_node_has_the_users_and_the_settings_the_layout_needs() -> None:
    users = xml(CLICKHOUSE / "users.d" / "cluster.xml")
    for profile in ("default", "grafana_readonly"):
        assert users.findtext(f"profiles/{profile}/distributed_product_mode") == "global", profile
        assert users.findtext(f"profiles/{profile}/load_balancing") == "in_order", profile
    assert users.findtext("profiles/default/distributed_foreground_insert") == "1"
    base = env(compose()["services"]["clickhouse"])
    for name, service in nodes().items():
        volumes = mounts(service)
        assert volumes["/etc/clickhouse-server/users.d/cluster.xml"] == "./clickhouse/users.d/cluster.xml"
        # a shard's part of a Grafana query runs there as the grafana user
        assert volumes["/etc/clickhouse-server/users.d/grafana.xml"] == "./clickhouse/users.d/grafana.xml"
        assert base.items() <= env(service).items(), name
        assert service["image"] == compose()["services"]["clickhouse"]["image"]


# ----------------------------------------------------------------------------- one DDL


def test_migrate_applies_the_cluster_layout_and_every_statement_parses(tmp_path: Path) -> None:
    """The migrate service's command with --dry-run: what it would apply, every table and view."""
    name, _ = cluster()
    stack = merged()["services"]
    migrate = stack["migrate"]
    assert migrate["command"] == ["db", "migrate", "--cluster", name]
    assert {k for k, v in migrate["depends_on"].items() if v["condition"] == "service_healthy"} >= set(
        nodes()
    )
    for role in ("migrate", "ingest", "worker"):
        url = default(env(stack[role])["AUDITSTREAM_CLICKHOUSE_URL"])
        assert re.match(r"clickhouse://[^@]+@clickhouse:9000/", url), role
    environ = {**os.environ, "AUDITSTREAM_DATA_DIR": str(tmp_path)}
    command = [sys.executable, "-c", "from auditstream.cli import main; main()", *migrate["command"]]
    printed = run([*command, "--dry-run"], cwd=ROOT, env=environ, timeout=300)
    assert printed.returncode == 0, printed.stderr
    statements = list(split_statements(printed.stdout))
    assert len(statements) > 100
    result = run(python_module("tests.chdb_parse"), cwd=ROOT, timeout=300, stdin_text=json.dumps(statements))
    assert result.returncode == 0, result.stderr[-3000:]
    for statement, parsed in zip(statements, json.loads(result.stdout), strict=True):
        assert parsed["error"] is None, f"{parsed['error']}\n{statement[:300]}"
        clusters = re.findall(r"ON CLUSTER (\S+)", parsed["formatted"])
        assert set(clusters) <= {name}, statement[:300]
        assert "Distributed(" not in statement or f"Distributed('{name}'," in statement
