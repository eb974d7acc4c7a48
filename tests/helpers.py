"""Test helpers: wait on conditions with deadlines, talk to a running service."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson

T = TypeVar("T")


POLL_FIRST_S, POLL_MAX_S = 0.05, 0.25
"""``wait_for``'s default polling: quick at first, then backing off to every 0.25 s. A
predicate that asks the service costs 12-20 ms of CPU (client, HTTP, store and chDB), so
polling a long wait every 0.1 s kept a fifth of a core busy per waiting test."""
RECOUNT_POLL_S = 1.0
"""``poll_s`` for a recount of every stored event: each costs the service a query over the
experiment's rows while it is still storing."""


def wait_for(
    predicate: Callable[[], T], timeout: float = 30.0, what: str = "condition", poll_s: float | None = None
) -> T:
    """Poll until ``predicate()`` is truthy; fail with ``what`` after ``timeout`` seconds.
    Polled every ``poll_s`` seconds when given (a recount over many rows: a second), else
    from ``POLL_FIRST_S`` backing off by half each time to ``POLL_MAX_S``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    pause = POLL_FIRST_S if poll_s is None else poll_s
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (OSError, urllib.error.URLError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(pause)  # wait-ok: poll interval under a deadline
        if poll_s is None:
            pause = min(pause * 1.5, POLL_MAX_S)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: Any


def http(
    method: str,
    url: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> Response:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            raw, status, hdrs = resp.read(), resp.status, dict(resp.headers)
    except urllib.error.HTTPError as exc:
        raw, status, hdrs = exc.read(), exc.code, dict(exc.headers)
    try:
        parsed = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        parsed = raw.decode(errors="replace")
    return Response(status, hdrs, parsed)


@dataclass
class Service:
    """A running ``auditstream up`` (or a lone ingest) reached over HTTP."""

    url: str
    api_key: str
    data_dir: Path
    process: subprocess.Popen[bytes] | None = None

    def post(
        self,
        events: Any,
        key: str | None = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
    ) -> Response:
        headers = {"Content-Type": content_type}
        if key != "":
            headers["Authorization"] = f"Bearer {key or self.api_key}"
        data = raw if raw is not None else orjson.dumps(events)
        return http("POST", self.url + "/v1/events", data, headers)

    def sql(self, statement: str) -> list[dict[str, Any]]:
        resp = http(
            "POST",
            self.url + "/v1/sql",
            orjson.dumps({"sql": statement}),
            {"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"},
            timeout=120,
        )
        assert resp.status == 200, (resp.status, resp.body)
        cols = resp.body["columns"]
        return [dict(zip(cols, r, strict=True)) for r in resp.body["rows"]]

    def scalar(self, statement: str) -> Any:
        rows = self.sql(statement)
        return next(iter(rows[0].values())) if rows else None

    def pid(self, name: str) -> int:
        """The process's pid from its pid file (FileNotFoundError, an OSError that
        ``wait_for`` waits through, while the supervisor restarts it and writes the file)."""
        text = (self.data_dir / "run" / f"{name}.pid").read_text().strip()
        if not text:
            raise FileNotFoundError(f"{name}.pid is being written")
        return int(text)

    def metric(self, name: str, labels: str = "") -> float:
        """The sum of a metric's samples from ``/metrics`` (``up`` gives its key every scope,
        ``metrics`` among them)."""
        text = http("GET", self.url + "/metrics", headers={"Authorization": f"Bearer {self.api_key}"}).body
        total = 0.0
        for line in str(text).splitlines():
            if line.startswith(name) and (not labels or labels in line):
                total += float(line.rsplit(" ", 1)[1])
        return total


def read_events(path: Path) -> list[dict[str, Any]]:
    """A JSONL file of events (a crawler's --out), each validated against the schema models
    and deduplicated by event id; a re-sent copy (same id) must be identical."""
    from pydantic import TypeAdapter

    from schemas.event_types import AnyEvent

    adapter: TypeAdapter[Any] = TypeAdapter(AnyEvent)
    by_id: dict[str, dict[str, Any]] = {}
    for line in path.read_bytes().splitlines():
        event = orjson.loads(line)
        adapter.validate_python(event)
        assert by_id.setdefault(event["event_id"], event) == event, "a re-sent event changed"
    return list(by_id.values())


def worker_metrics(service: Service, worker: int = 0) -> dict[str, float]:
    """A worker's Prometheus samples by name with labels (``up`` writes where it serves them)."""
    url = (service.data_dir / "run" / f"worker-{worker}.metrics").read_text().strip()
    out = {}
    for line in str(http("GET", url).body).splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


STARTED: list[subprocess.Popen[bytes]] = []
"""Every ``auditstream up`` a test started (``stop_leftovers`` ends what a failed test left)."""


def stop_leftovers(since: int = 0) -> None:
    """Stop the services started since ``STARTED[since]`` that still run: a test that failed
    before its own stop would otherwise leave one burning CPU beside the rest of the suite."""
    running = [proc for proc in STARTED[since:] if proc.poll() is None]
    for proc in running:
        proc.send_signal(signal.SIGINT)
    for proc in running:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


TEST_ENV = {"AUDITSTREAM_SHOCK_SETTLE_S": "10"}
"""Defaults of every test service: a round's shock judged 10 s after its last marker, not 30."""


def start_up(
    data_dir: Path, port: int, api_key: str, *extra: str, env: dict[str, str] | None = None
) -> Service:
    """Start ``auditstream up`` and wait until ingest is ready."""
    log = open(data_dir.parent / f"up-{port}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "auditstream",
            "up",
            "--data-dir",
            str(data_dir),
            "--port",
            str(port),
            "--api-key",
            api_key,
            *extra,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**TEST_ENV, **os.environ, **(env or {})},
    )
    STARTED.append(proc)
    svc = Service(f"http://127.0.0.1:{port}", api_key, data_dir, proc)

    def ready() -> bool:
        assert proc.poll() is None, f"auditstream up exited; see {log.name}"
        fully_up = (data_dir / "run" / "ready").exists()  # written once every process runs
        return fully_up and http("GET", svc.url + "/readyz", timeout=2).status == 200

    wait_for(ready, 90, "auditstream up to be ready")
    return svc


UNLIMITED = {"AUDITSTREAM_RATE_LIMIT_RPS": "100000", "AUDITSTREAM_RATE_LIMIT_BURST": "100000"}
"""Rate limits no test load reaches."""


@contextlib.contextmanager
def own_service(data_dir: Path, api_key: str, env: dict[str, str] | None = None) -> Iterator[Service]:
    """A service of the test's own (no other test's events or detectors mixed in), stopped cleanly."""
    svc = start_up(data_dir, free_port(), api_key, env={**UNLIMITED, **(env or {})})
    try:
        yield svc
    finally:
        assert stop_up(svc) == 0


def stop_up(svc: Service) -> int:
    assert svc.process is not None
    svc.process.send_signal(signal.SIGINT)
    return svc.process.wait(timeout=60)


def post_study(svc: Service, config: Any, total: int, batch: int = 200, later_pages: int = 0) -> None:
    """Post ``total`` simulated extension events and wait until all are in the statistics;
    then ``later_pages`` more of the same installs on result pages after the first (the
    paper's world has none: they are not units, and change no estimate)."""
    import asyncio
    from dataclasses import replace

    from collectors.simulate.extension_traffic import ExtensionTraffic
    from collectors.simulate.poster import post_batches

    stats = asyncio.run(post_batches(svc.url, svc.api_key, ExtensionTraffic(config).batches(batch, total)))
    assert stats.accepted == total
    if later_pages:
        later = ExtensionTraffic(replace(config, p_first_page=0.0)).batches(batch, later_pages)
        assert asyncio.run(post_batches(svc.url, svc.api_key, later)).accepted == later_pages
        total += later_pages
    # The study-wide rows are recomputed after the slices, so wait for both: a report read
    # between the two would see the slices complete and the study-wide rows not yet.
    # The per-subset rows (what reports read) come right after the study-wide ones; the
    # per-hour replicate sums (the 1-hour timeline) on a loop of their own, every 5 s.
    # Only first result pages are units; the per-install rows keep the later pages apart,
    # the per-hour sums do not (they hold the first pages' events of the raw rows).
    study = f"experiment_id = '{config.experiment_id}'"
    raw = f"SELECT count() FROM extension_events WHERE {study}"
    wait_for(lambda: svc.scalar(raw) == total, 180, f"{config.experiment_id} in extension_events")
    first_pages = svc.scalar(f"SELECT countIf(page_index = 0) FROM extension_events WHERE {study}")
    everything = "sum(units) + sum(impressions) + sum(later_units) + sum(later_impressions)"
    tables = ("arrangement_install_day", "arrangement_install", "arrangement_install_subset")
    for table in (*tables, "arrangement_replicates_1h"):
        only_all = " AND subset = 'all'" if table == "arrangement_install_subset" else ""
        hourly = ("sum(units) + sum(impressions)", first_pages)
        counted, want = (everything, total) if table in tables else hourly
        wait_for(
            lambda table=table, only_all=only_all, counted=counted, want=want: (
                svc.scalar(f"SELECT {counted} FROM {table} WHERE {study}{only_all}") == want
            ),
            180,  # generous: CI machines are shared; the wait ends as soon as the rows are there
            f"{config.experiment_id} in {table}",
        )


def report_json(svc: Service, experiment: str, *args: str) -> dict[str, Any]:
    """``auditstream report experiment EXPERIMENT --format json ARGS`` against ``svc``."""
    from typer.testing import CliRunner

    from auditstream.cli import app

    result = CliRunner().invoke(
        app,
        [
            "report",
            "experiment",
            experiment,
            "--url",
            svc.url,
            "--api-key",
            svc.api_key,
            "--format",
            "json",
            *args,
        ],
    )
    assert result.exit_code == 0, result.output
    return dict(orjson.loads(result.stdout))


def run_own_process(module: str, *args: str, timeout: float = 240) -> dict[str, Any]:
    """``python -m module args`` from the checkout, in a process of its own (chDB allows one
    session per process), and the JSON of its last line of output."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = orjson.loads(done.stdout.strip().splitlines()[-1])
    return out
