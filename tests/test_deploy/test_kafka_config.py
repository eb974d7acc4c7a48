"""The Apache Kafka the tests run (deploy/kafka/, supervisor/kafka_cluster.py): each node's
properties as rendered, the pom's release, the logging, the cluster id. No JVM is started
here; tests/integration/test_kafka_cluster.py runs the cluster."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from core.settings import Settings
from supervisor.kafka_cluster import (
    KAFKA_VERSION,
    TEMPLATES,
    KafkaDist,
    Node,
    free_ports,
    new_cluster_id,
    render_properties,
)
from tests.test_deploy.common import DEPLOY

POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def parsed(text: str) -> dict[str, str]:
    """A properties file as Kafka reads it, failing on a key given twice."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, value = line.split("=", 1)
        assert key not in out, f"{key} set twice"
        out[key] = value
    return out


def nodes(count: int, root: Path) -> list[Node]:
    return [Node(i, 19000 + i, 19100 + i, root / f"node-{i}") for i in range(1, count + 1)]


def test_three_nodes_are_one_replicated_quorum(tmp_path: Path) -> None:
    members = nodes(3, tmp_path)
    rendered = [parsed(render_properties(n, members)) for n in members]
    for node, props in zip(members, rendered, strict=True):
        assert props["process.roles"] == "broker,controller"
        assert props["node.id"] == str(node.node_id)
        assert props["controller.quorum.voters"] == "1@127.0.0.1:19101,2@127.0.0.1:19102,3@127.0.0.1:19103"
        assert (
            props["listeners"]
            == f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
        )
        assert props["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{node.port}"
        assert props["log.dirs"] == str(node.data_dir)
        # every topic (the service's, the offsets, the transactions) on all three nodes, and
        # acks=all needing two copies: one node may be down, no acknowledged event is lost
        for key in ("default.replication.factor", "offsets.topic.replication.factor"):
            assert props[key] == "3", key
        assert props["transaction.state.log.replication.factor"] == "3"
        assert props["min.insync.replicas"] == props["transaction.state.log.min.isr"] == "2"
        assert props["unclean.leader.election.enable"] == "false"
        assert props["group.initial.rebalance.delay.ms"] == "0"
        # at least the deduplication horizon: a replay from Kafka is still recognised
        assert int(props["log.retention.hours"]) >= 24 * Settings().dedup_horizon_days
    # only the node's own values differ
    differing = {k for k in rendered[0] if len({r[k] for r in rendered}) > 1}
    assert differing == {"node.id", "listeners", "advertised.listeners", "log.dirs"}


def test_one_node_is_its_own_quorum_with_one_copy(tmp_path: Path) -> None:
    [node] = nodes(1, tmp_path)
    props = parsed(render_properties(node, [node], partitions=12))
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19101"
    assert props["default.replication.factor"] == props["offsets.topic.replication.factor"] == "1"
    assert props["min.insync.replicas"] == props["transaction.state.log.min.isr"] == "1"
    assert props["num.partitions"] == "12"


def test_every_placeholder_is_filled(tmp_path: Path) -> None:
    members = nodes(3, tmp_path)
    assert "$" not in render_properties(members[0], members)


def test_the_pom_fetches_the_release_the_module_runs() -> None:
    pom = ET.parse(TEMPLATES / "pom.xml").getroot()
    assert pom.findtext("m:properties/m:kafka.version", namespaces=POM_NS) == KAFKA_VERSION
    artifacts = {
        d.findtext("m:artifactId", namespaces=POM_NS) for d in pom.iterfind(".//m:dependency", POM_NS)
    }
    assert "kafka_2.13" in artifacts
    assert KAFKA_VERSION in (DEPLOY / "kafka" / "README.md").read_text()


def test_the_nodes_log_to_their_own_file_not_stdout() -> None:
    props = parsed((TEMPLATES / "log4j.properties").read_text())
    appenders = [a.strip() for a in props["log4j.rootLogger"].split(",")[1:]]
    assert appenders == ["file"]
    assert props["log4j.appender.file"] == "org.apache.log4j.RollingFileAppender"
    assert props["log4j.appender.file.File"] == "${kafka.logs.dir}/server.log"
    assert not any("ConsoleAppender" in v for v in props.values())


def test_a_cluster_id_is_a_uuid_in_url_safe_base64_never_read_as_an_option() -> None:
    ids = {new_cluster_id() for _ in range(2000)}  # about 31 would start with '-' otherwise
    assert len(ids) == 2000
    for cluster_id in ids:
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", cluster_id)  # StorageTool -t ID
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_the_release_and_cache_are_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert KafkaDist.default(Settings(kafka_cache_dir=tmp_path)).root == tmp_path / f"kafka-{KAFKA_VERSION}"
    monkeypatch.setenv("AUDITSTREAM_KAFKA_VERSION", "4.1.1")
    monkeypatch.setenv("AUDITSTREAM_KAFKA_CACHE_DIR", str(tmp_path))
    dist = KafkaDist.default()
    assert (dist.version, dist.root) == ("4.1.1", tmp_path / "kafka-4.1.1")
    assert not dist.fetched()


def test_the_ports_of_a_cluster_are_distinct() -> None:
    ports = free_ports(6)
    assert len(set(ports)) == 6 and all(1024 < p < 65536 for p in ports)
