"""The whole service on one machine: broker, store, workers and ingest, supervised.

It starts the broker (unless an external Kafka is configured): the embedded tansu, in
memory, or with ``AUDITSTREAM_BROKER=kafka`` a local one-node Apache Kafka whose log lives
under ``data/kafka`` and survives restarts of the service (supervisor/kafka_cluster.py).
Then the store process that owns chDB, the worker(s) and ingest. It restarts whichever
dies (a restarted broker gets its topics again and its pid file names the new process),
and stops everything in order, the broker last. ``auditstream up`` (auditstream/cli/up.py)
is its command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import time

import orjson
from aiokafka.errors import KafkaError
from rich.console import Console
from rich.panel import Panel

from core.data_lock import HELD_ENV
from core.settings import Settings
from ingest.clock import read_offset
from ingest.producer import PAUSE_FILE
from schemas.topics import all_topics
from supervisor.banner import BannerKey, key_line, next_steps
from supervisor.broker import BrokerError, TansuBroker, create_topics, free_port, port_open
from supervisor.children import Child, wait_http
from supervisor.kafka_cluster import KafkaClusterError, KafkaDist, LocalKafka, require_tools
from supervisor.rotation_schedule import daily_rotation_due
from supervisor.run_files import write_run_file

PAUSE_BELOW = 5000
"""A broker rotation pauses intake once fewer accepted events than this wait to be stored ..."""
PRE_DRAIN_S = 3.0
"""... or after this long: under steady load the backlog never falls that low, and waiting
longer lets the broker grow well past its threshold (bench/README.md, "Figures behind the
code")."""

console = Console(stderr=True)


class Supervisor:
    def __init__(
        self,
        settings: Settings,
        demo_events: int,
        demo_rate: float,
        api_key: str,
        shown_key: BannerKey | None = None,
    ) -> None:
        self.settings = settings
        self.demo_events = demo_events
        self.demo_rate = demo_rate
        self.api_key = api_key
        """The demo's key (every scope); "" without a demo when no key was made or given."""
        self.shown_key = shown_key or BannerKey(api_key)
        """What the banner prints for the key: a key made here (the demo's) is shown once, as
        ``keys create`` shows it; a key given on the command line is not echoed."""
        self.broker: TansuBroker | LocalKafka | None = None
        self.children: list[Child] = []
        self.stopping = asyncio.Event()
        self.log_dir = settings.data_dir / "logs"
        self.env = dict(os.environ)
        self.worker_metrics: list[str] = []
        self.broker_started = time.monotonic()
        self.broker_started_at = self._service_time()
        """When the broker started on the service's clock (for ``broker_rotate_at``)."""
        self.rotations = 0
        self.rotation_postponed_until = 0.0
        self.broker_failures = 0
        """Restarts of a local Kafka in a row that did not come up (backoff)."""

    def _child(self, name: str, args: list[str], **kw: object) -> Child:
        child = Child(name, args, self.env, self.log_dir, self.settings.run_dir, **kw)  # type: ignore[arg-type]
        self.children.append(child)
        return child

    async def start(self) -> None:
        s = self.settings
        self.log_dir.mkdir(parents=True, exist_ok=True)
        s.run_dir.mkdir(parents=True, exist_ok=True)
        if port_open(s.host, s.port):
            raise RuntimeError(f"{s.host}:{s.port} is already in use; pick another --port")
        bootstrap = s.kafka_bootstrap
        if not bootstrap:
            if s.broker == "kafka":
                self.broker = await self._local_kafka()
            else:
                self.broker = TansuBroker(free_port(), log_path=self.log_dir / "broker.log")
            await self.broker.start_and_wait(all_topics(s.topic_prefix), s.partitions)
            self._broker_files()
            bootstrap = self.broker.bootstrap
        else:
            topics, replication = all_topics(s.topic_prefix), s.topic_replication_factor
            await create_topics(bootstrap, topics, s.partitions, replication)
        self.env["AUDITSTREAM_KAFKA_BOOTSTRAP"] = bootstrap
        self.env["AUDITSTREAM_DATA_DIR"] = str(s.data_dir)
        self.env[HELD_ENV] = str(s.data_dir.resolve())  # `up` holds its lock for its children
        self.env["AUDITSTREAM_PARTITIONS"] = str(s.partitions)

        if not s.clickhouse_url:
            store_port = s.store_port or free_port()
            token = secrets.token_urlsafe(24)
            self.env["AUDITSTREAM_STORE_URL"] = f"http://127.0.0.1:{store_port}"
            self.env["AUDITSTREAM_STORE_TOKEN"] = token
            store = self._child("store", ["store", "--port", str(store_port)])
            await store.start()
            await wait_http(f"http://127.0.0.1:{store_port}/healthz", 60, store)
        else:
            migrate = self._child("migrate", ["db", "migrate"], restart=False)
            await migrate.start()
            assert migrate.process is not None
            if await migrate.process.wait() != 0:
                raise RuntimeError(f"migrations failed; see {self.log_dir}/migrate.log")
            self.children.remove(migrate)

        for i in range(s.workers):
            # Each worker serves its own Prometheus metrics on a port of its own.
            port = s.worker_metrics_port + i if s.worker_metrics_port else free_port()
            worker = self._child(f"worker-{i}", ["worker"])
            worker.env = {**self.env, "AUDITSTREAM_WORKER_METRICS_PORT": str(port)}
            self.worker_metrics.append(f"http://127.0.0.1:{port}/metrics")
            (s.run_dir / f"worker-{i}.metrics").write_text(self.worker_metrics[-1] + "\n")
            await worker.start()
        if s.ingest_processes > 1:
            # Several processes share the port (SO_REUSEPORT); their metrics are merged
            # through prometheus-client's multiprocess directory.
            prom_dir = s.run_dir / "prometheus-ingest"
            shutil.rmtree(prom_dir, ignore_errors=True)
            prom_dir.mkdir(parents=True)
            self.env["PROMETHEUS_MULTIPROC_DIR"] = str(prom_dir)
        for i in range(s.ingest_processes):
            name = "ingest" if i == 0 else f"ingest-{i}"
            ingest = self._child(name, ["ingest", "--host", s.host, "--port", str(s.port)])
            await ingest.start()
            await wait_http(f"http://{s.host}:{s.port}/readyz", 60, ingest)
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self._broker_started()  # a scheduled rotation counts from a running service

    async def _local_kafka(self) -> LocalKafka:
        """The local Apache Kafka, fetched with Maven first if this machine has not got it."""
        s = self.settings
        dist = KafkaDist.default(s)
        require_tools(dist)
        if not dist.fetched():
            console.print(
                f"fetching Apache Kafka {dist.version} with Maven into {dist.jars} "
                "(once per machine: about 50 MB, under a minute)"
            )
            took = await asyncio.to_thread(dist.fetch)
            console.print(f"[green]Apache Kafka {dist.version} fetched in {took:.0f} s")
        return LocalKafka((s.data_dir / "kafka").resolve(), dist, s.partitions, s.topic_replication_factor)

    def _broker_files(self) -> None:
        """``broker.pid`` names the running broker, ``broker.addr`` its address."""
        assert self.broker is not None and self.broker.process is not None
        write_run_file(self.settings.run_dir / "broker.pid", str(self.broker.process.pid))
        write_run_file(self.settings.run_dir / "broker.addr", self.broker.bootstrap + "\n")

    def banner(self) -> None:
        s = self.settings
        if isinstance(self.broker, TansuBroker):
            broker = (
                f"tansu {self.broker.bootstrap} (in memory; ingest keeps what is not stored yet; "
                f"replaced past {s.broker_rotate_mb} MiB)"
            )
        elif self.broker is not None:
            broker = (
                f"Apache Kafka {self.broker.dist.version} {self.broker.bootstrap} (one node, "
                f"on disk in {self.broker.root}; log {self.broker.node_dir}/server.log)"
            )
        else:
            broker = f"Kafka {s.kafka_bootstrap}"
        store = f"ClickHouse {s.clickhouse_url}" if s.clickhouse_url else f"chDB {s.chdb_path}"
        url = f"http://{s.host}:{s.port}"
        lines = [
            f"[bold]ingest[/]   {url}  (POST /v1/events, POST /v1/sql, /readyz, /metrics)",
            f"[bold]broker[/]   {broker}",
            f"[bold]store[/]    {store}",
            f"[bold]workers[/]  {s.workers}  (metrics: {', '.join(self.worker_metrics)})",
            f"[bold]API key[/]  {key_line(self.shown_key)}",
            f"[bold]logs[/]     {self.log_dir}/",
            "",
            *next_steps(url, self.shown_key, self._data_dir_arg()),
            "Ctrl-C stops everything.",
        ]
        console.print(Panel("\n".join(lines), title="auditstream is up", expand=False))

    def _data_dir_arg(self) -> str:
        """`` --data-dir DIR`` for a command shown in the banner, unless DIR is the default."""
        default = Settings.model_fields["data_dir"].default
        return "" if self.settings.data_dir == default else f" --data-dir {self.settings.data_dir}"

    async def start_demo(self) -> None:
        s = self.settings
        demo = self._child(
            "demo",
            [
                "simulate",
                "demo",
                "--url",
                f"http://{s.host}:{s.port}",
                "--api-key",
                self.api_key,
                "--events",
                str(self.demo_events),
                "--rate",
                str(self.demo_rate),
            ],
            restart=False,
            inherit_output=True,
        )
        await demo.start()

    async def watch(self) -> None:
        """Restart what died; watch the broker's memory."""
        last_memory_note = 0.0
        while not self.stopping.is_set():
            for child in list(self.children):
                code = child.exited()
                if code is None:
                    continue
                if not child.restart:
                    child.forget()
                    if child.name == "demo":
                        console.print(f"demo load finished (exit {code}); the service keeps running")
                    self.children.remove(child)
                    continue
                child.restarts += 1
                delay = min(child.backoff_s * 2 ** min(child.restarts, 6), 30.0)
                if time.monotonic() - child.started_at > 60:
                    delay = child.backoff_s
                console.print(f"[yellow]{child.name} exited with code {code}; restarting in {delay:.1f}s")
                await asyncio.sleep(delay)
                await child.start()
            if self.broker is not None:
                if isinstance(self.broker, LocalKafka) and not self.broker.alive():
                    await self._restart_local_kafka()
                elif not self.broker.alive():
                    console.print(
                        "[red]the tansu broker died; restarting it (ingest sends again what is unstored)"
                    )
                    await self._restart_broker()
                    self._broker_started()
                rss = self.broker.rss_mb()
                why = self._rotation_due(rss)
                if why:
                    await self._rotate_broker(why)
                    rss = self.broker.rss_mb()
                now = time.monotonic()
                tansu = isinstance(self.broker, TansuBroker)  # Kafka's heap is bounded (-Xmx)
                if tansu and rss > self.settings.broker_memory_warn_mb and now - last_memory_note > 60:
                    console.print(
                        f"[yellow]tansu uses {rss:.0f} MiB: it keeps every event in memory, and could "
                        "not be replaced yet (AUDITSTREAM_BROKER_ROTATE_MB)"
                    )
                    last_memory_note = now
                with contextlib.suppress(OSError):  # a full disk must not stop the supervisor
                    (self.settings.run_dir / "broker.rss_mb").write_text(f"{rss:.1f}\n")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), 1.0)

    def _rotation_due(self, rss: float) -> str:
        """Why the embedded broker should be replaced now ("" if not; never a Kafka, which
        keeps its log on disk and trims it by retention)."""
        s, now = self.settings, time.monotonic()
        if now < self.rotation_postponed_until or not isinstance(self.broker, TansuBroker):
            return ""
        if s.broker_rotate_mb and rss > s.broker_rotate_mb:
            return f"it holds {rss:.0f} MiB (AUDITSTREAM_BROKER_ROTATE_MB={s.broker_rotate_mb})"
        if s.broker_rotate_every_s and now - self.broker_started > s.broker_rotate_every_s:
            return f"it ran {s.broker_rotate_every_s:.0f} s (AUDITSTREAM_BROKER_ROTATE_EVERY_S)"
        if daily_rotation_due(self.broker_started_at, self._service_time(), s.broker_rotate_at):
            return f"it is past {s.broker_rotate_at} UTC (AUDITSTREAM_BROKER_ROTATE_AT)"
        return ""

    def _service_time(self) -> float:
        """Epoch seconds on ingest's clock: the wall clock, plus a bench's offset if set."""
        offset_file = self.settings.clock_offset_file
        return time.time() + (read_offset(offset_file) if offset_file else 0)

    def _broker_started(self) -> None:
        self.broker_started = time.monotonic()
        self.broker_started_at = self._service_time()

    async def _rotate_broker(self, why: str, drain_timeout_s: float = 60.0) -> None:
        """Replace the embedded broker once everything it holds is stored: tansu keeps every
        message in memory and cannot delete records, so over a months-long study only a fresh
        broker keeps its memory bounded.

        Intake pauses (``broker.pause``: 503 broker_rotating with Retry-After), then each ingest
        process reports how many of its accepted events the worker has not stored yet
        (``ingest-state-<pid>.json``); at zero everywhere nothing accepted lives only in the
        broker, so it is replaced (workers stopped, new broker, workers started) and intake
        resumes. A drain that does not finish (the worker cannot store) postpones the rotation
        by ten minutes and intake resumes at once; ingest's backpressure bounds the backlog.
        """
        run_dir = self.settings.run_dir
        pause = run_dir / PAUSE_FILE
        console.print(
            f"[yellow]replacing the tansu broker: {why}; intake pauses until the worker has stored everything"
        )
        started = time.monotonic()
        try:
            while self._unstored() > PAUSE_BELOW and time.monotonic() - started < PRE_DRAIN_S:
                await asyncio.sleep(0.25)  # let the worker catch up a little, so the pause is short
            paused, asked = time.monotonic(), time.time()
            pause.write_text(why + "\n")
            while not self._drained(asked):
                if time.monotonic() - paused > drain_timeout_s:
                    console.print(
                        "[red]the worker did not store everything in time; broker rotation postponed"
                    )
                    self.rotation_postponed_until = time.monotonic() + 600
                    return
                await asyncio.sleep(0.25)
            drained = time.monotonic()
            await self._restart_broker(worker_stop_s=3.0)  # drained: a worker has nothing left to lose
            self._broker_started()
            self.rotations += 1
            with contextlib.suppress(OSError):
                (run_dir / "broker.rotations").write_text(f"{self.rotations}\n")
            console.print(
                f"[green]broker replaced: intake paused {time.monotonic() - paused:.1f} s "
                f"(drain {drained - paused:.1f} s, restart {time.monotonic() - drained:.1f} s)"
            )
        except OSError as exc:  # a full disk: try again later
            console.print(f"[red]broker rotation failed ({exc!r}); postponed")
            self.rotation_postponed_until = time.monotonic() + 600
        finally:
            with contextlib.suppress(FileNotFoundError):
                pause.unlink()

    def _ingest_states(self) -> list[dict[str, object] | None]:
        """The last state each running ingest process wrote (None: none readable yet)."""
        states: list[dict[str, object] | None] = []
        for child in self.children:
            if child.name.startswith("ingest") and child.process is not None:
                path = self.settings.run_dir / f"ingest-state-{child.process.pid}.json"
                try:
                    states.append(orjson.loads(path.read_bytes()))
                except (OSError, orjson.JSONDecodeError):
                    states.append(None)
        return states

    def _unstored(self) -> int:
        """Accepted events the worker has not stored yet, over every ingest process."""
        total = 0
        for doc in self._ingest_states():
            unstored = doc.get("unstored") if doc else None
            total += unstored if isinstance(unstored, int) else PAUSE_BELOW + 1
        return total

    def _drained(self, since: float) -> bool:
        """Whether every running ingest process paused after ``since`` with nothing unstored."""
        states = self._ingest_states()
        return bool(states) and all(
            doc is not None
            and doc.get("paused") is True
            and isinstance(at := doc.get("at"), float | int)
            and at > since + 0.3
            and doc.get("unstored") == 0
            for doc in states
        )

    async def _stop_workers(self, timeout_s: float) -> list[Child]:
        """Stop every worker (SIGTERM, then SIGKILL after ``timeout_s``); the workers stopped."""
        workers = [c for c in self.children if c.name.startswith("worker-")]
        await asyncio.gather(*(worker.stop(timeout_s) for worker in workers))
        return workers

    async def _restart_broker(self, worker_stop_s: float = 15.0) -> None:
        """Stop the workers, start a new broker, then start the workers on it.

        Stopped before the new broker listens: a worker that outlives the old broker
        reconnects to the new one (same address) and commits the offsets of the lost log to
        the new, empty group; its successor then skips the new log below them, where
        ingest's replay lands. Fresh workers find no offsets and read the new topics from
        the start; deduplication by event_id drops what was already stored. Restarted, not
        left to rejoin: a faust worker left to rejoin was seen stuck for minutes on a loaded
        machine.
        """
        assert isinstance(self.broker, TansuBroker)
        workers = await self._stop_workers(worker_stop_s)
        await self.broker.stop()
        try:
            await self.broker.start_and_wait(all_topics(self.settings.topic_prefix), self.settings.partitions)
        except (BrokerError, KafkaError, OSError) as exc:
            # Stopped, so the next round tries again (stopping the workers first again): a
            # broker left running without its topics creates them on first use, with its
            # default partition count.
            console.print(f"[red]the new broker did not come up ({exc!r}); trying again")
            await self.broker.stop()
        else:
            assert self.broker.process is not None  # the pid file names the live broker
            write_run_file(self.settings.run_dir / "broker.pid", str(self.broker.process.pid))
        for worker in workers:
            console.print(f"[yellow]starting {worker.name} on the new broker")
            await worker.start()

    async def _restart_local_kafka(self) -> None:
        """Start a local Kafka that exited again, on its log: what it acknowledged is on disk.

        Ingest stays up and reconnects, and on one broker sends again what is not stored yet
        after the outage (ingest/producer.py); the worker drops the copies. The workers are
        started again once Kafka is back (the consumer group's offsets are in its log): a
        faust worker left to rejoin was seen silent for minutes after "Ignoring missing
        topic", as with tansu (``_restart_broker``)."""
        assert isinstance(self.broker, LocalKafka)
        if self.broker_failures:
            with contextlib.suppress(TimeoutError):  # a backoff that SIGINT ends
                await asyncio.wait_for(self.stopping.wait(), min(2.0**self.broker_failures, 30.0))
            if self.stopping.is_set():
                return
        else:
            code = self.broker.process.returncode if self.broker.process else None
            log = self.broker.node_dir / "server.log"
            console.print(f"[red]Kafka exited with code {code} (see {log}); restarting it on its log")
        try:
            await self.broker.start_and_wait(all_topics(self.settings.topic_prefix), self.settings.partitions)
        except (KafkaClusterError, BrokerError, KafkaError, OSError) as exc:
            self.broker_failures += 1
            console.print(f"[red]Kafka did not come back ({exc}); trying again")
            await self.broker.stop()
        else:
            self.broker_failures = 0
            self._broker_files()
            console.print("[green]Kafka is back; starting the workers again")
            for worker in await self._stop_workers(5.0):
                await worker.start()

    async def stop(self) -> None:
        # Stop the load first, then intake, then what drains Kafka, then storage.
        rank = {"demo": 0, "ingest": 1, "worker": 2, "store": 3}
        for child in sorted(self.children, key=lambda c: rank.get(c.name.split("-")[0], 4)):
            await child.stop()
        if self.broker is not None:
            await self.broker.stop()
            with contextlib.suppress(FileNotFoundError):
                (self.settings.run_dir / "broker.pid").unlink()
        for stale in self.settings.run_dir.glob("worker-*.metrics"):
            stale.unlink(missing_ok=True)


async def run(sup: Supervisor, demo: bool) -> None:
    """Start everything, print the banner, supervise until SIGINT/SIGTERM, then stop in order."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, sup.stopping.set)
    try:
        with console.status("starting broker, store, workers and ingest..."):
            await sup.start()
        sup.banner()
        (sup.settings.run_dir / "ready").write_text(f"http://{sup.settings.host}:{sup.settings.port}\n")
        if demo:
            await sup.start_demo()
        await sup.watch()
    finally:
        with contextlib.suppress(FileNotFoundError):
            (sup.settings.run_dir / "ready").unlink()
        with console.status("stopping..."):
            await sup.stop()
        console.print("stopped cleanly")
