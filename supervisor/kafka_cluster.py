"""Apache Kafka on this machine: fetched from Maven Central, run as a KRaft cluster on loopback.

Two uses, one code path:

- **Tests** run the service against a three-node cluster (every node broker and
  controller, replication factor 3, ``min.insync.replicas=2``), SIGKILL the node that leads
  the most partitions, start it again and wait until it is back in sync.
- **A durable local broker**: one node with its data on disk (replication factor 1), for an
  operator who runs a long study on one server instead of the in-memory tansu.

The broker comes from Maven Central (``deploy/kafka/pom.xml``: ``org.apache.kafka:kafka_2.13``
and the logging binding) with ``mvn dependency:copy-dependencies``, once per machine, into
``~/.cache/auditstream/kafka-<version>/jars`` (``AUDITSTREAM_KAFKA_CACHE_DIR`` moves it), and
each node runs as ``java -cp 'jars/*' kafka.Kafka server.properties`` with the properties
rendered from ``deploy/kafka/server.properties`` and logs in its own directory
(``deploy/kafka/log4j.properties``). deploy/kafka/README.md says why this Kafka release.

``python -m supervisor.kafka_cluster fetch`` fetches (``.ci/run`` does, before the tests);
``python -m supervisor.kafka_cluster run --nodes 3 --dir DIR`` runs a cluster until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from core.errors import AuditstreamError
from core.settings import Settings
from supervisor.broker import create_topics, port_open, rss_mb

log = logging.getLogger(__name__)

KAFKA_VERSION = "3.9.2"
"""The Apache Kafka release fetched and run (deploy/kafka/README.md says why 3.9)."""

TEMPLATES = Path(__file__).resolve().parents[1] / "deploy" / "kafka"
"""pom.xml, server.properties and log4j.properties (a checkout, as ``pip install -e .``)."""

HEAP = ("-Xms256m", "-Xmx512m")
"""Per node: three nodes beside the service fit a small machine."""

JVM_FLAGS = (
    "-XX:+UseSerialGC",  # no concurrent GC threads: a few ms pauses on a 512 MB heap
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
QUICK_START = ("-XX:TieredStopAtLevel=1",)
"""The client compiler only: three nodes formatted and answering in a fraction of the time
(bench/README.md, "Figures behind the code"), for less peak throughput: what tests want,
not a long study."""


class KafkaClusterError(AuditstreamError):
    """Apache Kafka could not be fetched, started or reached."""


def default_cache_root(settings: Settings) -> Path:
    configured = settings.kafka_cache_dir
    return configured if configured is not None else Path.home() / ".cache" / "auditstream"


@dataclass(frozen=True)
class KafkaDist:
    """One Kafka release's jars, fetched with Maven into ``root/jars``."""

    root: Path
    version: str = KAFKA_VERSION

    @classmethod
    def default(cls, settings: Settings | None = None) -> KafkaDist:
        """The configured release (``AUDITSTREAM_KAFKA_VERSION``, else ``KAFKA_VERSION``)."""
        settings = settings or Settings()
        version = settings.kafka_version or KAFKA_VERSION
        return cls(default_cache_root(settings) / f"kafka-{version}", version)

    @property
    def jars(self) -> Path:
        return self.root / "jars"

    @property
    def classpath(self) -> str:
        return f"{self.jars}/*"

    @property
    def _stamp(self) -> Path:
        return self.jars / ".pom.sha256"

    @staticmethod
    def _pom_digest() -> str:
        return hashlib.sha256((TEMPLATES / "pom.xml").read_bytes()).hexdigest()

    def fetched(self) -> bool:
        """The jars are complete and from the current pom.xml: ``fetch`` moves the directory
        in place only once Maven succeeded, stamped with the pom's digest (an edited pom,
        another logging binding say, fetches again)."""
        try:
            return self._stamp.read_text() == self._pom_digest()
        except OSError:
            return False

    def fetch(self, timeout_s: float = 900.0) -> float:
        """Fetch the jars unless they are there; the seconds it took (0 when cached).

        Concurrent callers (two test processes) wait on a lock file, and the second finds
        the jars fetched."""
        if self.fetched():
            return 0.0
        for tool in ("mvn", "java"):
            if shutil.which(tool) is None:
                raise KafkaClusterError(
                    f"`{tool}` not found: Apache Kafka is fetched with Maven and run with Java "
                    "(apt-get install -y maven default-jdk-headless)"
                )
        self.root.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.root / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.fetched():
                return 0.0
            partial = self.root / "jars.partial"
            shutil.rmtree(partial, ignore_errors=True)
            pom = self.root / "pom.xml"
            shutil.copyfile(TEMPLATES / "pom.xml", pom)
            command = [
                "mvn",
                "-q",
                "-B",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={partial}",
                f"-Dkafka.version={self.version}",
            ]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
            except subprocess.TimeoutExpired as exc:
                raise KafkaClusterError(f"Maven did not fetch Kafka within {timeout_s:.0f} s") from exc
            if done.returncode != 0:
                output = (done.stdout + done.stderr)[-3000:]
                raise KafkaClusterError(f"Maven could not fetch Kafka {self.version}:\n{output}")
            (partial / self._stamp.name).write_text(self._pom_digest())
            shutil.rmtree(self.jars, ignore_errors=True)
            partial.rename(self.jars)
        return time.monotonic() - started


def new_cluster_id() -> str:
    """A KRaft cluster id: a UUID in URL-safe base64 without padding (22 characters), never
    starting with '-': Kafka's StorageTool reads ``-t -IJEL...`` as an option and refuses to
    format (one CI run in 64 failed so)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass
class Node:
    """One KRaft node: broker and controller, its files under ``directory``."""

    node_id: int
    port: int
    controller_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def properties(self) -> Path:
        return self.directory / "server.properties"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        """The node's own log (log4j); the JVM's stdout and stderr go to ``stdout.log``."""
        return self.directory / "server.log"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def render_properties(node: Node, nodes: list[Node], host: str = "127.0.0.1", partitions: int = 6) -> str:
    """``server.properties`` of ``node`` in a cluster of ``nodes``: replication 3 (or the
    number of nodes if fewer) and ``min.insync.replicas`` 2 (1 for a single node)."""
    replication = min(len(nodes), 3)
    values = {
        "node_id": node.node_id,
        "voters": ",".join(f"{n.node_id}@{host}:{n.controller_port}" for n in nodes),
        "host": host,
        "port": node.port,
        "controller_port": node.controller_port,
        "data_dir": node.data_dir,
        "replication": replication,
        "min_insync": min(replication, 2),
        "partitions": partitions,
    }
    return Template((TEMPLATES / "server.properties").read_text()).substitute(values)


@dataclass
class KafkaCluster:
    """``nodes`` KRaft nodes on loopback with their files under ``root``.

    ``root/cluster.json`` keeps the cluster id and the ports, so a cluster started again
    on the same directory (the durable one-node broker) finds its data and its address.
    """

    root: Path
    nodes: int = 3
    dist: KafkaDist = field(default_factory=KafkaDist.default)
    host: str = "127.0.0.1"
    partitions: int = 6
    heap: tuple[str, ...] = HEAP
    quick_start: bool = True
    """Start fast (``QUICK_START``) rather than run fastest: tests, not a long study."""
    extra: dict[str, str] = field(default_factory=dict)
    """Properties appended to every node's ``server.properties`` (``DURABLE`` for a local broker)."""
    members: list[Node] = field(default_factory=list)
    cluster_id: str = ""

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{n.port}" for n in self.members)

    def node(self, node_id: int) -> Node:
        return next(n for n in self.members if n.node_id == node_id)

    def prepare(self) -> None:
        """Choose (or read back) the id and ports, write every node's properties, format
        the storage of each node not formatted yet."""
        self.root.mkdir(parents=True, exist_ok=True)
        layout = self.root / "cluster.json"
        if layout.exists():
            saved = json.loads(layout.read_text())
            if len(saved["nodes"]) != self.nodes:
                raise KafkaClusterError(
                    f"{self.root} holds a {len(saved['nodes'])}-node cluster, not {self.nodes}"
                )
            self.cluster_id = saved["cluster_id"]
            ports = [(n["port"], n["controller_port"]) for n in saved["nodes"]]
        else:
            self.cluster_id = new_cluster_id()
            free = free_ports(2 * self.nodes, self.host)
            ports = list(zip(free[::2], free[1::2], strict=True))
        self.members = [
            Node(i + 1, port, controller_port, self.root / f"node-{i + 1}")
            for i, (port, controller_port) in enumerate(ports)
        ]
        layout.write_text(
            json.dumps(
                {
                    "cluster_id": self.cluster_id,
                    "version": self.dist.version,
                    "nodes": [{"port": n.port, "controller_port": n.controller_port} for n in self.members],
                },
                indent=1,
            )
        )
        formatting = []
        for node in self.members:
            node.directory.mkdir(parents=True, exist_ok=True)
            extra = "".join(f"{k}={v}\n" for k, v in self.extra.items())
            node.properties.write_text(
                render_properties(node, self.members, self.host, self.partitions) + extra
            )
            if not (node.data_dir / "meta.properties").exists():
                command = self._java(
                    *self._logging(node), "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c"
                )
                formatting.append((node, subprocess.Popen([*command, str(node.properties)], **_quiet())))
        for node, process in formatting:
            try:
                out, _ = process.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                raise KafkaClusterError(f"formatting node {node.node_id}'s storage took over 120 s") from None
            if process.returncode != 0:
                raise KafkaClusterError(f"formatting node {node.node_id} failed:\n{out.decode()[-2000:]}")

    def start(self) -> None:
        """Fetch Kafka if needed, prepare, and start every node (``wait_ready`` waits for them)."""
        self.dist.fetch()
        self.prepare()
        for node in self.members:
            self.start_node(node.node_id)

    def start_node(self, node_id: int) -> None:
        """Start one node (again: a killed node keeps its data and rejoins)."""
        node = self.node(node_id)
        if node.alive():
            return
        for port in (node.port, node.controller_port):
            if port_open(self.host, port):
                raise KafkaClusterError(f"port {port} of node {node_id} is in use")
        command = self._java(*self._logging(node), "kafka.Kafka", str(node.properties))
        with open(node.directory / "stdout.log", "ab") as out:
            node.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def kill(self, node_id: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one node and, for SIGKILL or SIGTERM, wait until it is gone."""
        node = self.node(node_id)
        if node.process is None:
            return
        node.process.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            node.process.wait(timeout=60)

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM every node (a clean shutdown), SIGKILL whichever outlives ``timeout_s``.

        Nodes stopped together can wait for a controller that already left, hence the
        bound."""
        running = [n for n in self.members if n.alive()]
        for node in running:
            node.process.terminate()  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout_s
        for node in running:
            assert node.process is not None
            try:
                node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _java(self, *args: str) -> list[str]:
        quick = QUICK_START if self.quick_start else ()
        return ["java", *self.heap, *JVM_FLAGS, *quick, "-cp", self.dist.classpath, *args]

    @staticmethod
    def _logging(node: Node) -> tuple[str, str]:
        """log4j writes the node's ``server.log`` in its directory."""
        return (
            f"-Dkafka.logs.dir={node.directory}",
            f"-Dlog4j.configuration=file:{TEMPLATES / 'log4j.properties'}",
        )

    # -- from the cluster's metadata -------------------------------------------------

    async def _admin(self) -> AIOKafkaAdminClient:
        live = ",".join(f"{self.host}:{n.port}" for n in self.members if n.alive()) or self.bootstrap
        admin = AIOKafkaAdminClient(bootstrap_servers=live, request_timeout_ms=5000)
        try:
            await admin.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await admin.close()
            raise
        return admin

    async def brokers(self) -> list[int]:
        """The node ids of the brokers the cluster's metadata lists."""
        admin = await self._admin()
        try:
            cluster = await admin.describe_cluster()
        finally:
            await admin.close()
        return sorted(int(b["node_id"]) for b in cluster["brokers"])

    async def describe(self, topics: list[str] | None = None) -> dict[tuple[str, int], dict[str, Any]]:
        """Per (topic, partition) of ``topics`` (None: every topic, internal ones too): its
        ``leader``, ``replicas`` and ``isr`` (node ids)."""
        admin = await self._admin()
        try:
            described = await admin.describe_topics(topics)
        finally:
            await admin.close()
        out = {}
        for topic in described:
            if topic["error_code"] != 0:
                raise KafkaClusterError(f"topic {topic['topic']}: error code {topic['error_code']}")
            for p in topic["partitions"]:
                out[(topic["topic"], p["partition"])] = {
                    "leader": p["leader"],
                    "replicas": list(p["replicas"]),
                    "isr": list(p["isr"]),
                }
        return out

    def controller(self) -> int | None:
        """The node id of the active controller (the KRaft quorum's leader), None if unknown.

        Not from the metadata: a KRaft broker answers clients with a random broker as the
        "controller" (they cannot reach controllers). Each node writes the leader it knows
        and its epoch to ``quorum-state``; the highest epoch is the latest."""
        known = []
        for node in self.members:
            with contextlib.suppress(OSError, ValueError, KeyError):
                state = json.loads((node.data_dir / "__cluster_metadata-0" / "quorum-state").read_text())
                if state["leaderId"] >= 0:
                    known.append((state["leaderEpoch"], state["leaderId"]))
        return max(known)[1] if known else None

    async def busiest_leader(self, topics: list[str]) -> int:
        """The node that leads the most partitions of ``topics``; on a tie the active
        controller (killing it fails the quorum's leader over too), then the lowest id."""
        leaders = Counter(p["leader"] for p in (await self.describe(topics)).values())
        controller = self.controller()
        return min(leaders, key=lambda node: (-leaders[node], node != controller, node))

    async def wait_ready(self, timeout_s: float = 120.0) -> float:
        """Wait until every node is listed as a broker; the seconds it took."""
        return await self._wait(self._all_brokers, timeout_s, f"{self.nodes} brokers")

    async def wait_in_sync(self, topics: list[str], timeout_s: float = 120.0) -> float:
        """Wait until every node is a broker and every partition of ``topics`` has all its
        replicas in sync (a restarted node caught up); the seconds it took."""

        async def in_sync() -> bool:
            if not await self._all_brokers():
                return False
            described = await self.describe(topics)
            return bool(described) and all(
                sorted(p["isr"]) == sorted(p["replicas"]) for p in described.values()
            )

        return await self._wait(in_sync, timeout_s, "every replica in sync")

    async def _all_brokers(self) -> bool:
        return await self.brokers() == [n.node_id for n in self.members]

    async def _wait(self, check: Any, timeout_s: float, what: str) -> float:
        """Poll ``check`` until it is true; fail at once when a started node has exited (it
        will not answer: its log says why), or after ``timeout_s``."""
        started = time.monotonic()
        last: object = None
        while time.monotonic() - started < timeout_s:
            dead = [n for n in self.members if n.process is not None and not n.alive()]
            if dead:
                tails = "\n".join(
                    f"--- node {n.node_id} ---\n{_tail(n.directory / 'stdout.log')}\n{_tail(n.log_path)}"
                    for n in dead
                )
                raise KafkaClusterError(f"Kafka node(s) {[n.node_id for n in dead]} exited:\n{tails}")
            try:
                if await check():
                    return time.monotonic() - started
            except (KafkaError, OSError, KafkaClusterError) as exc:
                last = exc
            await asyncio.sleep(0.5)
        raise KafkaClusterError(
            f"Kafka at {self.bootstrap}: no {what} within {timeout_s:.0f} s (last: {last!r})"
        )


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free now: all bound at once, so none is handed out twice."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in sockets]


def _quiet() -> dict[str, Any]:
    return {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT}


def _tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return f"({path} unreadable)"


@contextlib.contextmanager
def running_cluster(root: Path, nodes: int = 3, partitions: int = 6) -> Iterator[KafkaCluster]:
    """A started cluster, answering, stopped on exit."""
    cluster = KafkaCluster(root, nodes, partitions=partitions)
    try:
        cluster.start()
        asyncio.run(cluster.wait_ready())
        yield cluster
    finally:
        cluster.stop()


DURABLE = {"log.flush.interval.ms": "1000", "log.flush.scheduler.interval.ms": "1000"}
"""A local broker has one copy of each event, none to recover from after a power cut: its log
is written to disk every second (Kafka leaves it to the OS by default, often ~30 s)."""

TOOLS = "apt-get install default-jdk-headless maven"


def require_tools(dist: KafkaDist) -> None:
    """Java runs Kafka; Maven fetches it (only needed until it is cached)."""
    needed = ("java",) if dist.fetched() else ("java", "mvn")
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        raise KafkaClusterError(
            f"a local Apache Kafka needs {' and '.join(f'`{t}`' for t in missing)}, not found: "
            f"`{TOOLS}` (Java 17 runs Kafka, Maven fetches it once)"
        )


@dataclass
class LocalKafka:
    """The durable broker of ``auditstream up --broker kafka``: one node on loopback whose data
    lives under ``root`` (the data directory's ``kafka/``), formatted once and kept across
    restarts (``root/cluster.json`` keeps its cluster id and ports).

    The supervisor drives it as it drives the embedded tansu (``TansuBroker``): ``process``,
    ``bootstrap``, ``start_and_wait``, ``alive``, ``rss_mb`` and ``stop``. It runs with the
    JVM's full compiler (``quick_start`` off: a long study, not a test) and ``DURABLE``.
    """

    root: Path
    dist: KafkaDist = field(default_factory=KafkaDist.default)
    partitions: int = 6
    replication_factor: int | None = None
    cluster: KafkaCluster = field(init=False)
    started: bool = False

    def __post_init__(self) -> None:
        self.cluster = KafkaCluster(
            self.root, 1, self.dist, partitions=self.partitions, quick_start=False, extra=DURABLE
        )

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self.cluster.members[0].process if self.cluster.members else None

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    @property
    def node_dir(self) -> Path:
        """The node's files: ``server.log``, ``stdout.log``, ``data/``."""
        return self.cluster.members[0].directory if self.cluster.members else self.root

    def alive(self) -> bool:
        return bool(self.cluster.members) and self.cluster.members[0].alive()

    def rss_mb(self) -> float:
        process = self.process
        return rss_mb(process.pid) if process is not None and self.alive() else 0.0

    async def start_and_wait(self, topics: list[str], partitions: int, timeout_s: float = 120.0) -> None:
        """Start the node (its storage formatted on first use only) and create missing topics."""
        require_tools(self.dist)
        await asyncio.to_thread(self._start)
        await self.cluster.wait_ready(timeout_s)
        await create_topics(self.bootstrap, topics, partitions, self.replication_factor)

    def _start(self) -> None:
        self.dist.fetch()  # nothing once cached
        self._end_orphans()
        if not self.started:
            self._move_taken_ports()  # not on a restart: the running service has the address
        self.cluster.prepare()
        self.cluster.start_node(1)
        self.started = True

    async def stop(self, timeout_s: float = 60.0) -> None:
        """A clean shutdown (SIGTERM: the log is flushed and closed), SIGKILL past ``timeout_s``."""
        await asyncio.to_thread(self.cluster.stop, timeout_s)

    def _end_orphans(self, timeout_s: float = 60.0) -> list[int]:
        """End a node an ``up`` killed without its children (SIGKILL, OOM) left running on
        ``root``: it holds the log's lock and the ports. Only the ``up`` that holds the data
        directory's lock starts this broker, so such a node is nobody's (core/data_lock.py)."""
        prefix = f"{self.root}/"
        orphans = []
        for pid, args in _processes():
            if "kafka.Kafka" in args and any(a.startswith(prefix) for a in args):
                log.warning("stopping Kafka pid %d, left running on %s by an earlier up", pid, self.root)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
                orphans.append(pid)
        deadline = time.monotonic() + timeout_s
        while (running := [pid for pid in orphans if _running(pid)]) and time.monotonic() < deadline:
            time.sleep(0.2)  # wait-ok: polling processes that are not ours to wait for
        for pid in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return orphans

    def _move_taken_ports(self) -> None:
        """Saved ports another program listens on now are replaced by free ones: a single
        node's address may change between runs (clients are told the new one)."""
        layout = self.root / "cluster.json"
        if not layout.exists():
            return
        saved = json.loads(layout.read_text())
        ports = [p for n in saved["nodes"] for p in (n["port"], n["controller_port"])]
        if any(port_open(self.cluster.host, p) for p in ports):
            port, controller_port = free_ports(2, self.cluster.host)
            log.warning("Kafka's ports %s are taken; moving it to %d", ports, port)
            saved["nodes"] = [{"port": port, "controller_port": controller_port}]
            layout.write_text(json.dumps(saved, indent=1))


def _processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, arguments) of every process this user may read."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                args = (entry / "cmdline").read_bytes().split(b"\0")
                yield int(entry.name), [a.decode(errors="replace") for a in args]


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: its parent may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def main(argv: list[str] | None = None) -> int:
    doc = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m supervisor.kafka_cluster", description=doc)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("fetch", help=f"fetch Apache Kafka {KAFKA_VERSION} with Maven (once per machine)")
    run = commands.add_parser("run", help="run a KRaft cluster on loopback until Ctrl-C")
    run.add_argument("--nodes", type=int, default=3)
    run.add_argument("--dir", type=Path, required=True, help="its files (kept: run again to resume)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # "Unable connect" while nodes start
    if args.command == "fetch":
        dist = KafkaDist.default()
        took = dist.fetch()
        how = f"fetched in {took:.0f} s" if took else "cached"
        log.info("Apache Kafka %s in %s (%s)", dist.version, dist.jars, how)
        return 0
    started = time.monotonic()
    with running_cluster(args.dir, args.nodes) as cluster:
        took = time.monotonic() - started
        log.info("%d node(s) up in %.1f s: bootstrap %s", args.nodes, took, cluster.bootstrap)

        async def until_signalled() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()

        asyncio.run(until_signalled())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
