"""Soak: a study's life compressed, through the live path of ``auditstream up``.

Run from a checkout: ``.venv/bin/python -m bench.soak [--broker kafka] [--days 30]
[--events-per-day 100000]`` (``--days 6 --events-per-day 5000`` for a quick check).

The same installs (``--installs``, extension traffic from one seeded
``ExtensionTraffic``) come back every simulated day; each day's events are posted with
``POST /v1/events`` at a paced rate, 503s (``broker_rotating``, ``storage_behind``) and
broken connections retried with the same event ids, and every id answered 202 kept.
Ingest stamps received_at with the wall clock plus ``AUDITSTREAM_CLOCK_OFFSET_FILE``
(ingest/clock.py, bench-only): the bench moves that offset so simulated day d's events
sweep through calendar day d, UTC (each install's events of a day fall in a couple of
dozen 10-second slices spread over the day), so days close for the per-install statistics
as they would in a real study.

During the run: the broker is replaced (tansu: daily at ``--rotate-at`` on the service's
clock, and past ``--rotate-mb``) or
SIGKILLed and restarted (Kafka, on ``--broker-kill-day``); the worker is SIGKILLed on
``--worker-kill-day`` (the supervisor restarts it); and the schema is migrated as an
operator upgrading mid-study would: days 1..``--migrate-after-day`` run the revision
before the newest migration (``git archive``, with the clock offset's commit applied, run
with the same virtualenv), then ``up`` is stopped (SIGINT), ``auditstream db migrate``
of HEAD applies the newer migrations to the data directory, and HEAD's ``up`` carries on.
The service always runs a ``git archive`` of a commit, never the working tree (which other
work edits while a soak runs); a run that gets no 202 for 5 minutes is broken off.

Per simulated day (each day ends when every accepted event is stored): each process's
resident memory (``/proc/<pid>/status`` via ``data/run/*.pid``, the day's peak and its
end), the worker's and the store's CPU per stored event (``/proc/<pid>/stat``, summed over
the processes that held the pid file that day), freshness (a probe click at a time, in
its own experiment, posted during the load and polled in ``clicks_by_rank_1m``), events
accepted and stored. At the end, with the service stopped, on the data directory itself:
every 202'd id stored exactly once, and the minute aggregate, the per-install day rows and
the study-wide per-install and per-subset rows equal a recount of the raw events (the
checks of tests/integration/test_end_to_end.py). The figures go to a JSON file and a
summary row to ``bench/results.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from rich.console import Console
from rich.table import Table

from bench.common import append_result, git_sha, percentile
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from supervisor.broker import free_port, rss_mb
from supervisor.children import wait_http

KEY = "bench-key-0123456789-padded-to-35-chars"
EXPERIMENT = "soak"
BATCH = 100
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parent.parent
console = Console(stderr=True)


# --- processes: memory and CPU from /proc -------------------------------------------------


def _cpu_ticks(pid: int) -> tuple[int, int] | None:
    """(utime + stime, starttime) of a process, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12]), int(fields[19])


@dataclass
class ProcessSampler:
    """Every ``every_s``: each process named by a pid file, its RSS and its CPU.

    CPU is cumulative per name across restarts: a pid (told apart from a reused one by its
    start time) adds what it used since it was first seen, up to its last sample, so a
    killed process loses at most one interval and a new one's start-up before its first
    sample is left out."""

    run_dir: Path
    every_s: float = 0.5
    cpu_s: dict[str, float] = field(default_factory=dict)
    peak_mb: dict[str, float] = field(default_factory=dict)
    last_mb: dict[str, float] = field(default_factory=dict)
    _seen: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # name: pid, start, ticks
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> ProcessSampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def sample(self) -> None:
        for path in self.run_dir.glob("*.pid"):
            try:
                pid = int(path.read_text().strip())
            except (OSError, ValueError):
                continue
            name, ticks = path.stem, _cpu_ticks(pid)
            if ticks is None:
                continue
            with self._lock:
                used, start = ticks
                before = self._seen.get(name)
                if before is not None and before[:2] == (pid, start):
                    self.cpu_s[name] = self.cpu_s.get(name, 0.0) + (used - before[2]) / CLOCK_TICK
                self._seen[name] = (pid, start, used)
                mb = rss_mb(pid)
                self.last_mb[name] = mb
                self.peak_mb[name] = max(self.peak_mb.get(name, 0.0), mb)

    def day_start(self) -> None:
        with self._lock:
            self.peak_mb = dict(self.last_mb)

    def snapshot(self) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
        with self._lock:
            return dict(self.cpu_s), dict(self.peak_mb), dict(self.last_mb)


# --- the service --------------------------------------------------------------------------


@dataclass
class Service:
    tmp: Path
    broker: str
    rotate_mb: int
    rotate_at: str = ""
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data(self) -> Path:
        return self.tmp / "data"

    @property
    def offset_file(self) -> Path:
        return self.tmp / "clock-offset"

    def env(self, code: Path) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(code),
            "AUDITSTREAM_RATE_LIMIT_RPS": "1e9",
            "AUDITSTREAM_RATE_LIMIT_BURST": "1000000000",
            "AUDITSTREAM_BROKER_ROTATE_MB": str(self.rotate_mb),
            "AUDITSTREAM_BROKER_ROTATE_AT": self.rotate_at,
            "AUDITSTREAM_CLOCK_OFFSET_FILE": str(self.offset_file),
        }

    def start(self, code: Path) -> None:
        """``up`` from the tree at ``code`` (HEAD's, or the old revision's)."""
        args = ["up", "--data-dir", str(self.data), "--port", str(self.port), "--api-key", KEY]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "auditstream", *args, "--broker", self.broker],
            cwd=code,
            env=self.env(code),
            stdout=open(self.tmp / "up.log", "ab"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
        )
        try:
            asyncio.run(wait_http(self.url + "/readyz", 300))
        except RuntimeError:
            raise RuntimeError(f"service did not start; see {self.tmp}/up.log") from None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=300)
        self.proc = None

    def migrate(self, code: Path) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "auditstream", "db", "migrate", "--data-dir", str(self.data)],
            cwd=code,
            env=self.env(code),
            capture_output=True,
            text=True,
            check=True,
        )
        return " ".join((out.stdout + out.stderr).split())

    def pid(self, name: str) -> int:
        return int((self.data / "run" / f"{name}.pid").read_text().strip())

    def rotations(self) -> int:
        try:
            return int((self.data / "run" / "broker.rotations").read_text().strip())
        except (OSError, ValueError):
            return 0


def tree_at(rev: str, tree: Path) -> Path:
    """The files of commit ``rev`` (``git archive``): what the service runs, never the working
    tree, which other work edits while a soak runs."""
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def old_revision_tree(tmp: Path) -> tuple[str, Path]:
    """The tree of the revision before the last commit that added a migration (the schema an
    operator ran before upgrading), with the bench's clock offset applied."""
    git = ["git", "-C", str(REPO)]
    migrations = "schemas/clickhouse/migrations"
    added = subprocess.check_output(
        [*git, "log", "-n1", "--diff-filter=A", "--format=%H", "--", migrations], text=True
    ).strip()
    new = subprocess.check_output(
        [*git, "show", "--diff-filter=A", "--name-only", "--format=", added, "--", migrations], text=True
    ).split()
    rev = subprocess.check_output([*git, "rev-parse", f"{added}^" if added else "HEAD"], text=True).strip()
    tree = tree_at(rev, tmp / f"old-{rev[:8]}")
    if not (tree / "ingest" / "clock.py").exists():
        clock = subprocess.check_output(
            [*git, "log", "-n1", "--diff-filter=A", "--format=%H", "--", "ingest/clock.py"], text=True
        ).strip()
        patch = subprocess.run(
            [*git, "show", clock, "--", "ingest", "core"], capture_output=True, check=True
        ).stdout
        subprocess.run(["git", "apply"], cwd=tree, input=patch, check=True)
    return f"{rev[:8]} (without {', '.join(Path(n).name for n in new)})", tree


# --- load --------------------------------------------------------------------------------


class Stalled(RuntimeError):
    """Intake refused everything for longer than a soak can wait: the run is broken off."""


@dataclass
class Poster:
    session: aiohttp.ClientSession
    url: str
    stall_s: float = 300.0
    retried: dict[str, int] = field(default_factory=dict)
    last_202: float = field(default_factory=time.monotonic)

    async def post(self, body: bytes, ids: list[str]) -> list[str]:
        """Post until answered 202 (same body, same ids); the ids accepted."""
        headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
        while True:
            try:
                async with self.session.post(self.url + "/v1/events", data=body, headers=headers) as r:
                    doc = await r.json(content_type=None)
                    if r.status == 202:
                        self.last_202 = time.monotonic()
                        refused = {item["index"] for item in doc.get("rejected", [])}
                        return [i for n, i in enumerate(ids) if n not in refused]
                    if r.status != 503:
                        raise RuntimeError(f"POST /v1/events: {r.status} {doc}")
                    reason = str(doc.get("error", "503"))
                    wait = float(r.headers.get("Retry-After", "1"))
            except (aiohttp.ClientError, TimeoutError) as exc:
                reason, wait = type(exc).__name__, 0.5
            self.retried[reason] = self.retried.get(reason, 0) + 1
            if time.monotonic() - self.last_202 > self.stall_s:
                raise Stalled(f"no 202 for {self.stall_s:.0f} s (last answer: {reason}); see data/logs")
            await asyncio.sleep(wait)

    async def sql(self, statement: str) -> list[list[Any]]:
        while True:
            try:
                async with self.session.post(
                    self.url + "/v1/sql", json={"sql": statement}, headers={"Authorization": f"Bearer {KEY}"}
                ) as resp:
                    doc = await resp.json(content_type=None)
                    if resp.status == 200:
                        return list(doc["rows"])
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.5)  # a store or broker being replaced


def day_bodies(traffic: ExtensionTraffic, n: int) -> list[tuple[bytes, list[str]]]:
    return [(orjson.dumps(b), [e["event_id"] for e in b]) for b in traffic.batches(BATCH, n)]


@dataclass
class Day:
    number: int
    date: dt.date
    accepted: int = 0
    stored: int = 0
    probes: list[float] = field(default_factory=list)
    retried: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    figures: dict[str, Any] = field(default_factory=dict)


async def run_day(
    svc: Service,
    day: Day,
    bodies: list[tuple[bytes, list[str]]],
    rate: float,
    ids_out: Any,
    stored_before: int,
    mid_day: Callable[[], Coroutine[Any, Any, None]] | None,
) -> None:
    """Post the day's events at ``rate``, probes alongside; return once all are stored."""
    midnight = dt.datetime.combine(day.date, dt.time(), dt.UTC).timestamp()
    total = len(bodies)
    sent = 0

    def set_offset() -> None:
        frac = min(sent / max(total, 1), 1.0)
        target = midnight + 60 + frac * (86400 - 180)
        tmp = svc.offset_file.with_suffix(".tmp")
        tmp.write_text(str(round(target - time.time())))
        tmp.replace(svc.offset_file)

    set_offset()
    await asyncio.sleep(1.2)  # ingest reads the offset at most once a second
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        poster = Poster(session, svc.url)
        start = time.perf_counter()
        queue = iter(range(total))
        accepted: list[str] = []

        async def worker() -> None:
            nonlocal sent
            for i in queue:
                ahead = start + i * BATCH / rate - time.perf_counter()
                if ahead > 0:
                    await asyncio.sleep(ahead)
                accepted.extend(await poster.post(*bodies[i]))
                sent += 1

        async def clock() -> None:
            while True:
                set_offset()
                await asyncio.sleep(0.25)

        async def probes() -> None:
            template = next(
                e for e in ExtensionTraffic(TrafficConfig(seed=7)).events() if e["type"] == "click"
            )
            i = 0
            while not posted.is_set() or i < 3:  # one at a time, so probing adds little load
                exp = f"probe-{day.number}-{i}"
                event = {**template, "experiment_id": exp, "event_id": str(uuid.uuid4())}
                event["sent_at"] = dt.datetime.now(dt.UTC).isoformat()
                t0 = time.perf_counter()
                accepted.extend(await poster.post(orjson.dumps([event]), [event["event_id"]]))
                statement = (
                    "SELECT sum(units) FROM clicks_by_rank_1m "
                    f"WHERE experiment_id = '{exp}' AND original_rank = 1"
                )
                while int((await poster.sql(statement))[0][0] or 0) < 1:
                    await asyncio.sleep(0.05)  # poll resolution: 50 ms
                day.probes.append(time.perf_counter() - t0)
                i += 1
                await asyncio.sleep(0.3)

        async def event_mid_day() -> None:
            while sent < total // 2:
                await asyncio.sleep(0.1)
            if mid_day is not None:
                await mid_day()

        posted = asyncio.Event()
        ticking = asyncio.create_task(clock())
        probing = asyncio.create_task(probes())
        try:
            await asyncio.gather(*(worker() for _ in range(8)), event_mid_day())
            posted.set()
            await probing
        finally:
            for task in (ticking, probing):
                task.cancel()
            await asyncio.gather(ticking, probing, return_exceptions=True)
        day.accepted = len(accepted)  # the day's events and its probes
        ids_out.write("\n".join(accepted).encode() + b"\n")
        day.retried = poster.retried
        waited = time.perf_counter()
        while True:
            rows = await poster.sql("SELECT count() FROM raw_extension_events")
            day.stored = int(rows[0][0]) - stored_before
            if day.stored >= day.accepted or time.perf_counter() - waited > 600:
                break
            await asyncio.sleep(0.25)
        day.seconds = time.perf_counter() - start


# --- the end: exactness on the data directory itself ---------------------------------------


class StoreSql:
    """The tests' ``Service.sql`` answered by chDB in this process, on the stopped service's
    data directory (no answer-size limit, unlike ``/v1/sql``)."""

    def __init__(self, data: Path) -> None:
        from core.store.chdb_store import ChdbStore

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.store = ChdbStore(data / "clickhouse")

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def sql(self, statement: str) -> list[dict[str, Any]]:
        return list(self.run(self.store.query(statement, read_only=True)).dicts())

    def scalar(self, statement: str) -> Any:
        rows = self.sql(statement)
        return next(iter(rows[0].values())) if rows else None

    def close(self) -> None:
        self.run(self.store.close())
        self.loop.call_soon_threadsafe(self.loop.stop)


def final_checks(data: Path, ids_path: Path) -> dict[str, Any]:
    # the recount checks of the test suite (imported here: bench runs from a checkout)
    e2e: Any = importlib.import_module("tests.integration.test_end_to_end")

    db = StoreSql(data)
    out: dict[str, Any] = {}
    try:
        db.run(db.store.execute("CREATE DATABASE IF NOT EXISTS soak_check"))
        db.run(
            db.store.execute("CREATE TABLE soak_check.accepted (id String) ENGINE = MergeTree ORDER BY id")
        )
        ids = [i for i in ids_path.read_bytes().split(b"\n") if i]
        for n in range(0, len(ids), 200_000):
            lines = b"\n".join(orjson.dumps({"id": i.decode()}) for i in ids[n : n + 200_000])
            db.run(db.store.insert_json_rows("soak_check.accepted", lines))
        stored = "(SELECT toString(event_id) AS id FROM raw_extension_events)"
        out["accepted"] = db.scalar("SELECT count() FROM soak_check.accepted")
        out["accepted_distinct"] = db.scalar("SELECT uniqExact(id) FROM soak_check.accepted")
        out["stored_rows"] = db.scalar("SELECT count() FROM raw_extension_events")
        out["stored_distinct"] = db.scalar("SELECT uniqExact(event_id) FROM raw_extension_events")
        out["accepted_not_stored"] = db.scalar(
            f"SELECT count() FROM soak_check.accepted WHERE id NOT IN {stored}"
        )
        out["stored_not_accepted"] = db.scalar(
            f"SELECT count() FROM {stored} WHERE id NOT IN (SELECT id FROM soak_check.accepted)"
        )
        out["stored_once"] = (
            out["stored_rows"] == out["stored_distinct"] == out["accepted_distinct"]
            and out["accepted_not_stored"] == out["stored_not_accepted"] == 0
        )

        def install_days() -> None:
            keyed = e2e.install_day_counts
            recount = keyed(db.sql(e2e.INSTALL_RECOUNT.format(exp=EXPERIMENT)))
            assert recount and keyed(db.sql(e2e.INSTALL_STORED.format(exp=EXPERIMENT))) == recount

        checks: dict[str, Callable[[], None]] = {
            "clicks_by_rank_1m": lambda: e2e.assert_aggregate_exact(db, EXPERIMENT),
            "arrangement_install_day": install_days,
            "arrangement_install_and_subsets": lambda: e2e.assert_study_install_rows_exact(db, EXPERIMENT),
        }
        for name, check in checks.items():
            t0 = time.perf_counter()
            try:
                check()
                out[f"recount_{name}"] = "equal"
            except (AssertionError, TimeoutError) as exc:
                out[f"recount_{name}"] = f"DIFFERENT: {str(exc)[:200]}"
            out[f"recount_{name}_s"] = round(time.perf_counter() - t0, 1)
    finally:
        db.close()
    return out


# --- the run --------------------------------------------------------------------------------


def _ratio(days: list[Day], key: str, base: int) -> float | None:
    first = next((d.figures.get(key) for d in days if d.number == base), None)
    last = days[-1].figures.get(key)
    return round(last / first, 3) if first and last is not None else None


def print_table(days: list[Day], roles: list[str]) -> None:
    table = Table(title="soak, per simulated day")
    for col in ["day", "date", "accepted", "stored", *[f"{r} MB" for r in roles]]:
        table.add_column(col, justify="right")
    for col in ["worker µs/ev", "store µs/ev", "fresh p50/p95 s", "rot", "retries", "s", "notes"]:
        table.add_column(col, justify="right")
    for d in days:
        f = d.figures
        table.add_row(
            str(d.number),
            d.date.isoformat(),
            f"{d.accepted:,}",
            f"{d.stored:,}",
            *[f"{f['peak_mb'].get(r, 0):.0f}" for r in roles],
            f"{f['worker_us_per_event']:.0f}",
            f"{f['store_us_per_event']:.0f}",
            f"{f['fresh_p50_s']:.2f}/{f['fresh_p95_s']:.2f}",
            str(f["rotations"]),
            ",".join(f"{k}:{v}" for k, v in d.retried.items()),
            f"{d.seconds:.0f}",
            "; ".join(d.notes),
        )
    Console(width=220).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--broker", choices=["tansu", "kafka"], default="tansu")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--events-per-day", type=int, default=100_000)
    parser.add_argument("--installs", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=6000, help="events/s posted (paced)")
    parser.add_argument("--rotate-mb", type=int, default=512, help="AUDITSTREAM_BROKER_ROTATE_MB (tansu)")
    parser.add_argument(
        "--rotate-at", default="04:00", help="AUDITSTREAM_BROKER_ROTATE_AT (tansu; '' = by size only)"
    )
    parser.add_argument("--worker-kill-day", type=int, default=None, help="default: two thirds in")
    parser.add_argument("--broker-kill-day", type=int, default=None, help="Kafka only; default: half way")
    parser.add_argument(
        "--migrate-after-day", type=int, default=3, help="0: run this checkout throughout, no migration"
    )
    parser.add_argument("--base-day", type=int, default=5, help="the day the last one is compared with")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    worker_kill = args.worker_kill_day or max(2, args.days * 2 // 3)
    broker_kill = args.broker_kill_day or max(2, args.days // 2)

    tmp = Path(tempfile.mkdtemp(prefix=f"soak-{args.broker}-"))
    console.print(f"soak: {args.days} days x {args.events_per_day:,} events, {args.broker}, in {tmp}")
    svc = Service(tmp, args.broker, args.rotate_mb, args.rotate_at)
    traffic = ExtensionTraffic(
        TrafficConfig(experiment_id=EXPERIMENT, seed=args.seed, installs=args.installs)
    )
    base_date = dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1)
    head = subprocess.check_output(["git", "-C", str(REPO), "rev-parse", "HEAD"], text=True).strip()
    new_code = tree_at(head, tmp / f"head-{head[:8]}")
    code, schema = new_code, f"{head[:8]} throughout"
    if args.migrate_after_day:
        schema, code = old_revision_tree(tmp)
        console.print(f"days 1-{args.migrate_after_day} on {schema}")
    began = time.perf_counter()
    loads = [os.getloadavg()]
    svc.start(code)
    ids_path = tmp / "accepted-ids"
    days: list[Day] = []
    stored_total = 0
    broken = ""
    try:
        with ProcessSampler(svc.data / "run") as sampler, ids_path.open("ab") as ids_out:
            sampler.sample()
            cpu_before, _, _ = sampler.snapshot()
            for number in range(1, args.days + 1):
                day = Day(number, base_date + dt.timedelta(days=number - 1))
                bodies = day_bodies(traffic, args.events_per_day)
                kills = [n for n, on in (("worker-0", worker_kill), ("broker", broker_kill)) if on == number]
                if args.broker != "kafka" and "broker" in kills:
                    kills.remove("broker")

                async def mid_day(kills: list[str] = kills, day: Day = day) -> None:
                    for name in kills:
                        os.kill(svc.pid(name), signal.SIGKILL)
                        day.notes.append(f"{name} SIGKILL")

                sampler.day_start()
                asyncio.run(run_day(svc, day, bodies, args.rate, ids_out, stored_total, mid_day))
                ids_out.flush()
                sampler.sample()
                cpu, peak, last = sampler.snapshot()
                stored_total += day.stored
                used = {n: cpu.get(n, 0.0) - cpu_before.get(n, 0.0) for n in cpu}
                cpu_before = cpu
                per_event = max(day.stored, 1)
                day.figures = {
                    "peak_mb": {n: round(v, 1) for n, v in peak.items()},
                    "end_mb": {n: round(v, 1) for n, v in last.items()},
                    "broker_peak_mb": round(peak.get("broker", 0.0), 1),
                    "cpu_s": {n: round(v, 2) for n, v in used.items()},
                    "worker_us_per_event": sum(v for n, v in used.items() if n.startswith("worker"))
                    / per_event
                    * 1e6,
                    "store_us_per_event": used.get("store", 0.0) / per_event * 1e6,
                    "fresh_p50_s": percentile(day.probes, 0.5) if day.probes else 0.0,
                    "fresh_p95_s": percentile(day.probes, 0.95) if day.probes else 0.0,
                    "probes": len(day.probes),
                    "rotations": svc.rotations(),
                    "load": os.getloadavg(),
                }
                loads.append(os.getloadavg())
                days.append(day)
                f = day.figures
                console.print(
                    f"day {number}: {day.accepted:,} accepted, {day.stored:,} stored in {day.seconds:.0f} s; "
                    f"broker {f['broker_peak_mb']:.0f} MB; worker {f['worker_us_per_event']:.0f} µs/event, "
                    f"store {f['store_us_per_event']:.0f}; fresh p95 {f['fresh_p95_s']:.2f} s; "
                    f"rotations {f['rotations']}; {'; '.join(day.notes)} {day.retried or ''}"
                )
                if number == args.migrate_after_day:
                    svc.stop()
                    applied = svc.migrate(new_code)
                    svc.start(new_code)
                    day.notes.append(f"stopped, `db migrate` of {head[:8]} ({applied}), its up")
                    console.print(day.notes[-1])
    except Stalled as exc:
        broken = f"day {len(days) + 1}: {exc}"
        console.print(f"[red]broken off: {broken}[/red]")
    finally:
        svc.stop()
    total_s = time.perf_counter() - began
    checks: dict[str, Any] = {"skipped": broken} if broken else {}
    if not broken:
        console.print("checking exactness on the data directory ...")
        checks = final_checks(svc.data, ids_path)
    roles = sorted({n for d in days for n in d.figures["peak_mb"]})
    print_table(days, roles)
    base = args.base_day
    ratios = {
        "broker_peak_mb": _ratio(days, "broker_peak_mb", base),
        "worker_us_per_event": _ratio(days, "worker_us_per_event", base),
        "store_us_per_event": _ratio(days, "store_us_per_event", base),
        "fresh_p95_s": _ratio(days, "fresh_p95_s", base),
    }
    result = {
        "bench": "soak",
        "broker": args.broker,
        "days": args.days,
        "events_per_day": args.events_per_day,
        "installs": args.installs,
        "rate": args.rate,
        "rotate_mb": args.rotate_mb,
        "rotate_at": args.rotate_at,
        "schema": schema,
        "migrated_after_day": args.migrate_after_day,
        "worker_kill_day": worker_kill,
        "broker_kill_day": broker_kill if args.broker == "kafka" else None,
        "total_s": round(total_s),
        "broken_off": broken or None,
        "load_min_max": [round(min(x[0] for x in loads), 2), round(max(x[0] for x in loads), 2)],
        f"last_to_day_{base}": ratios,
        "checks": checks,
    }
    figures = {**result, "git_sha": git_sha(), "per_day": [{**d.__dict__, "date": str(d.date)} for d in days]}
    (tmp / "soak.json").write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    console.print(f"figures: {tmp / 'soak.json'}")
    append_result(Path(__file__).parent / "results.jsonl", result)
    if not args.keep and not broken:
        shutil.rmtree(svc.data, ignore_errors=True)


if __name__ == "__main__":
    main()
