"""Prometheus scrapes ingest's /metrics with a key of the ``metrics`` scope: the compose
one-shot ``scrape-key`` makes it in the ``keys`` volume, at the path the scrape job reads
through its mount of that volume; the file in the repository is no key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

from ingest.api_keys import KeyFile
from tests.test_deploy.common import PROMETHEUS_CONFIG, compose, load_yaml

CONTAINER_CONFIG_DIR = PurePosixPath("/etc/prometheus")


def ingest_job() -> dict[str, Any]:
    jobs = {j["job_name"]: j for j in load_yaml(PROMETHEUS_CONFIG)["scrape_configs"]}
    job: dict[str, Any] = jobs["auditstream-ingest"]
    return job


def volume_mounts(service: dict[str, Any]) -> dict[str, str]:
    """{target: source} of a service's named-volume mounts."""
    out = {}
    for mount in service["volumes"]:
        source, target = mount.split(":")[:2]
        if not source.startswith("."):
            out[target] = source
    return out


def key_path_in_keys_volume() -> PurePosixPath:
    """Where in the ``keys`` volume Prometheus reads the scrape key from."""
    credentials = PurePosixPath(ingest_job()["authorization"]["credentials_file"])
    assert not credentials.is_absolute(), "relative to the config, so promtool can check it here"
    in_container = CONTAINER_CONFIG_DIR / credentials  # Prometheus resolves it beside its config
    prometheus = compose()["services"]["prometheus"]
    for target, source in volume_mounts(prometheus).items():
        if source == "keys" and in_container.is_relative_to(target):
            assert f"keys:{target}:ro" in prometheus["volumes"], "read-only"
            return in_container.relative_to(target)
    raise AssertionError(f"{in_container} is not in the keys volume of the prometheus service")


def test_the_ingest_job_sends_a_bearer_key_from_the_keys_volume() -> None:
    assert ingest_job()["authorization"]["type"] == "Bearer"
    key_path_in_keys_volume()
    services = compose()["services"]
    assert services["prometheus"]["depends_on"]["scrape-key"]["condition"] == "service_completed_successfully"
    assert volume_mounts(services["ingest"])["/data"] == "keys"  # the key file ingest reads


def test_the_placeholder_beside_the_config_is_no_key() -> None:
    placeholder = PROMETHEUS_CONFIG.parent / ingest_job()["authorization"]["credentials_file"]
    text = placeholder.read_text().strip()
    assert text.startswith("not-a-key") and not text.startswith("as_")


def test_scrape_key_makes_one_metrics_key_where_prometheus_reads_it(tmp_path: Path) -> None:
    """The one-shot's script, run against a directory standing in for the keys volume (its
    /data), with this checkout's ``auditstream``: a key of the metrics scope only, written
    once; a second run keeps it."""
    service = compose()["services"]["scrape-key"]
    assert service["entrypoint"] == ["/bin/sh", "-ec"] and volume_mounts(service) == {"/data": "keys"}
    script = service["command"][0].replace("/data", str(tmp_path))
    env = {
        **os.environ,
        "AUDITSTREAM_DATA_DIR": str(tmp_path),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    for _ in range(2):
        result = subprocess.run(
            ["/bin/sh", "-ec", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stdout + result.stderr
    secret = (tmp_path / key_path_in_keys_volume()).read_text().strip()
    keys = KeyFile(tmp_path / "keys.json")
    key = keys.lookup(secret)
    assert key is not None and key.scopes == ("metrics",) and key.name == "prometheus"
    assert len(keys.load()) == 1  # the second run made no other
