"""The crawler against a local fake suggestion server (real formats on real paths).

Fast politeness settings keep each test to a few seconds; waits are conditions with
deadlines. The fake server runs in a thread of this process, so on a loaded machine it
may see a request late (by 200 ms and more): server-side arrival times only give lower
bounds on gaps (a request arrives after it was sent) and averages over a run; exact
spacing is checked on what the client planned (the limiter's slots, the backoff delays).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import TypeAdapter
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.autocomplete import fetch, parsers
from collectors.autocomplete.crawler import CrawlSummary, run_crawl
from collectors.autocomplete.engines import resolve
from collectors.autocomplete.fetch import open_clients
from collectors.autocomplete.politeness import Politeness
from collectors.autocomplete.state import CrawlParams, CrawlStore
from collectors.common.archive import Archive
from collectors.common.politeness import Backoff, RateLimiter
from collectors.common.sinks import JsonlSink
from schemas.event_types import AnyEvent
from tests.fakes.suggest_server import FakeSuggestServer
from tests.helpers import read_events, wait_for
from tests.test_collectors.test_autocomplete_bfs import EDGES_DEPTH_3, EXPECTED_DEPTH_3, GRAPH

EVENT = TypeAdapter(AnyEvent)
FAST = Politeness(
    rate=20.0,
    jitter=0.2,
    concurrency=2,
    max_retries=3,
    backoff_base=0.05,
    backoff_max=2.0,
    timeout_s=5.0,
    breaker_threshold=5,
    breaker_cooldown_s=0.5,
    seed=7,
)
runner = CliRunner()


@pytest.fixture
def server() -> Iterator[FakeSuggestServer]:
    with FakeSuggestServer(GRAPH) as s:
        yield s


def nodes(events: list[dict[str, Any]], engine: str | None = None) -> dict[str, dict[str, Any]]:
    return {
        e["query"]: e for e in events if e["type"] == "autocomplete_node" and engine in (None, e["engine"])
    }


def crawl(
    tmp_path: Path,
    url: str,
    roots: tuple[str, ...],
    *,
    crawl_id: str = "ac-test",
    engines: tuple[tuple[str, str], ...] = (("google", "psy-ab"),),
    max_depth: int = 3,
    politeness: Politeness = FAST,
) -> tuple[CrawlSummary, list[dict[str, Any]]]:
    store = CrawlStore(tmp_path / "state")
    params = CrawlParams(crawl_id=crawl_id, roots=roots, engines=engines, max_depth=max_depth)
    adapters = resolve(
        [e for e, _ in engines], dict(engines), {e: url for e, _ in engines}, crawl_id=crawl_id
    )
    out = tmp_path / f"{crawl_id}.jsonl"

    async def go() -> CrawlSummary:
        sink = JsonlSink(out)
        try:
            with store.create(params) as journal:
                return await run_crawl(
                    journal, adapters, archive=Archive(tmp_path / "archive"), sink=sink, politeness=politeness
                )
        finally:
            await sink.aclose()

    summary = asyncio.run(go())
    return summary, read_events(out)


def expected_rows(expected: list[Any]) -> set[tuple[str, str | None, int]]:
    return {(n.query, n.parent, n.depth) for n in expected}


def test_crawl_visits_exactly_the_hand_computed_bfs_on_both_engines(
    tmp_path: Path, server: FakeSuggestServer
) -> None:
    engines = (("google", "psy-ab"), ("bing", "as"))
    summary, events = crawl(tmp_path, server.base_url, ("alpha",), engines=engines)
    assert summary.completed and summary.crawl_id == "ac-test"
    for engine, fmt in engines:
        got = nodes(events, engine)
        assert {(e["query"], e["parent"], e["depth"]) for e in got.values()} == expected_rows(
            EXPECTED_DEPTH_3
        )
        asked = [h.query for h in server.hits if h.fmt == fmt]
        assert sorted(asked) == sorted(n.query for n in EXPECTED_DEPTH_3)  # each exactly once
        assert all(e["status"] == "ok" and e["raw_ref"].startswith("sha256:") for e in got.values())
        root = got["alpha"]["suggestions"]
        assert [(s["rank"], s["text"], s["self_loop"]) for s in root] == [
            (1, "alpha", True),
            (2, "alpha beta", False),
            (3, "alpha gamma", False),
        ]
        # the edge back to the root and the edge to an already-seen node are both kept
        assert [s["text"] for s in got["alpha beta delta"]["suggestions"]] == [
            "alpha beta delta zeta",
            "alpha",
        ]
        assert "alpha gamma" in [s["text"] for s in got["alpha beta"]["suggestions"]]
        assert "too deep" not in asked  # beyond max depth: an edge, never a query
        (done,) = [e for e in events if e["type"] == "crawl_completed" and e["engine"] == engine]
        assert (done["n_nodes"], done["n_edges"], done["n_failed"], done["max_depth"]) == (
            7,
            EDGES_DEPTH_3,
            0,
            3,
        )
        assert done["trimming_rule"] == "first_last_word"
    assert {e["crawl_id"] for e in events} == {"ac-test"}
    assert sum(e["type"] == "crawl_started" for e in events) == 2


def test_a_changed_graph_gives_a_changed_crawl(tmp_path: Path, server: FakeSuggestServer) -> None:
    crawl(tmp_path, server.base_url, ("alpha",), crawl_id="ac-1")
    server.set_graph({**GRAPH, "alpha": ["alpha omega", "alpha beta"], "alpha omega": ["alpha omega psi"]})
    _, events = crawl(tmp_path, server.base_url, ("alpha",), crawl_id="ac-2")
    got = {(e["query"], e["parent"], e["depth"]) for e in nodes(events).values()}
    assert got == {
        ("alpha", None, 0),
        ("alpha omega", "alpha", 1),
        ("alpha beta", "alpha", 1),
        ("alpha omega psi", "alpha omega", 2),
        ("alpha beta delta", "alpha beta", 2),
        ("alpha gamma", "alpha beta", 2),  # no longer suggested by the root: one level deeper
        ("alpha beta delta zeta", "alpha beta delta", 3),
        ("alpha gamma epsilon", "alpha gamma", 3),
    }


def test_rate_limit_is_respected_per_engine(
    tmp_path: Path, server: FakeSuggestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    wide = {"r": [f"r {i}" for i in range(10)], **{f"r {i}": [f"r {i} x"] for i in range(10)}}
    server.set_graph(wide)
    rate = 10.0
    booked: list[list[float]] = []
    """Per limiter (one per engine, in the order of the engines), the slot of each request."""

    def recording_limiter(rate: float, jitter: float, *, rng: random.Random) -> RateLimiter:
        slots: list[float] = []
        booked.append(slots)

        def clock() -> float:  # read once per wait(): the earliest the request could go ...
            now = time.monotonic()
            slots.append(now)
            return now

        async def sleep(seconds: float) -> None:  # ... unless it is given a later slot
            slots[-1] += seconds
            await asyncio.sleep(seconds)

        return RateLimiter(rate, jitter, rng=rng, clock=clock, sleep=sleep)

    monkeypatch.setattr(fetch, "RateLimiter", recording_limiter)
    polite = Politeness(rate=rate, jitter=0.3, concurrency=3, timeout_s=5.0, seed=1)
    engines = (("google", "firefox"), ("bing", "osjson"))
    crawl(tmp_path, server.base_url, ("r",), engines=engines, politeness=polite)
    for (_, fmt), slots in zip(engines, booked, strict=True):
        times = sorted(h.at for h in server.hits if h.fmt == fmt)
        assert len(times) == len(slots) == 21
        # the client's own schedule: every request got a slot at least 1/rate after the last
        assert min(b - a for a, b in itertools.pairwise(slots)) >= 1 / rate - 1e-9
        # the server saw no request before its slot (the same monotonic clock, one process) ...
        assert all(at >= slot - 0.001 for at, slot in zip(times, slots, strict=True))
        # ... and no faster than the rate over the run (10%: the first arrival may be late)
        assert (times[-1] - times[0]) / (len(times) - 1) >= 0.9 / rate
    both = sorted(h.at for h in server.hits)
    assert (len(both) - 1) / (both[-1] - both[0]) > rate  # the limit is per engine, not global


def test_backs_off_on_429_with_growing_spacing(
    tmp_path: Path, server: FakeSuggestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script("alpha", 429, 429, 503)
    polite = Politeness(rate=50.0, jitter=0.0, max_retries=4, backoff_base=0.1, breaker_threshold=10, seed=3)
    planned: list[float] = []

    class RecordedBackoff(Backoff):
        def delay(self, attempt: int, retry_after: float | None = None) -> float:
            planned.append(super().delay(attempt, retry_after))
            return planned[-1]

    monkeypatch.setattr(fetch, "Backoff", RecordedBackoff)
    summary, events = crawl(tmp_path, server.base_url, ("alpha",), max_depth=0, politeness=polite)
    hits = [h for h in server.hits if h.query == "alpha"]
    assert [h.answer for h in hits] == ["429", "429", "503", "200"]
    assert len(planned) == 3 and 0.1 <= planned[0] < planned[1] < planned[2], planned  # growing
    # each retry reached the server at least its pause after the answer before it (the answer
    # left the server after it logged the request), however late the server thread ran
    gaps = [b.at - a.at for a, b in itertools.pairwise(hits)]
    assert all(gap >= pause for gap, pause in zip(gaps, planned, strict=True)), (gaps, planned)
    assert nodes(events)["alpha"]["status"] == "ok" and summary.completed
    with CrawlStore(tmp_path / "state").open("ac-test") as journal:
        (record,) = journal.of("node")
        assert record["attempts"] == 4


def test_crawler_metrics_count_answers_retries_and_breaker_openings(
    tmp_path: Path, server: FakeSuggestServer
) -> None:
    from prometheus_client import REGISTRY

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = {
        "retry": value("auditstream_crawler_requests_total", engine="google", outcome="retry"),
        "ok": value("auditstream_crawler_requests_total", engine="google", outcome="ok"),
        "backoffs": value("auditstream_crawler_backoffs_total", engine="google"),
        "blocks": value("auditstream_crawler_blocks_total", engine="google"),
    }
    server.script("alpha", 429, 503)
    polite = Politeness(
        rate=50.0,
        jitter=0.0,
        max_retries=4,
        backoff_base=0.05,
        breaker_threshold=1,
        breaker_cooldown_s=0.1,
        seed=3,
    )
    crawl(tmp_path, server.base_url, ("alpha",), max_depth=0, politeness=polite)
    assert (
        value("auditstream_crawler_requests_total", engine="google", outcome="retry") - before["retry"] == 2
    )
    assert value("auditstream_crawler_backoffs_total", engine="google") - before["backoffs"] == 2
    assert value("auditstream_crawler_requests_total", engine="google", outcome="ok") - before["ok"] == 1
    assert (
        value("auditstream_crawler_blocks_total", engine="google") - before["blocks"] == 1
    )  # the 429 opened it


def test_retries_run_out_then_the_node_is_recorded_and_the_crawl_goes_on(
    tmp_path: Path, server: FakeSuggestServer
) -> None:
    server.script("alpha beta", 429, 429, 429, 429)
    server.script("alpha gamma", 500, 500, 500, 500)
    _, events = crawl(tmp_path, server.base_url, ("alpha",), max_depth=2)
    got = nodes(events)
    assert got["alpha beta"]["status"] == "blocked" and got["alpha beta"]["suggestions"] == []
    assert got["alpha gamma"]["status"] == "error"
    assert set(got) == {"alpha", "alpha beta", "alpha gamma"}  # failed nodes have no children
    (done,) = [e for e in events if e["type"] == "crawl_completed"]
    assert done["n_failed"] == 2 and done["n_nodes"] == 3
    archived = Archive(tmp_path / "archive").get(got["alpha gamma"]["raw_ref"])
    assert archived.meta["status"] == 500 and archived.meta["format"] == "psy-ab"


def cli_args(tmp_path: Path, url: str, roots: list[str], *extra: str) -> list[str]:
    roots_file = tmp_path / "roots.txt"
    roots_file.write_text("# test roots\n" + "\n".join(roots) + "\n")
    return [
        "crawl",
        "autocomplete",
        "--roots",
        str(roots_file),
        "--engine",
        "google",
        "--endpoint",
        f"google={url}",
        "--out",
        str(tmp_path / "events.jsonl"),
        "--state-dir",
        str(tmp_path / "state"),
        "--archive-dir",
        str(tmp_path / "archive"),
        "--no-progress",
        "--rate",
        "10",
        "--backoff",
        "0.05",
        "--seed",
        "1",
        *extra,
    ]


def test_captcha_pages_open_the_circuit_breaker_and_the_cli_says_so(
    tmp_path: Path, server: FakeSuggestServer
) -> None:
    server.set_graph(
        {"r1": ["r1 a"], "r2": ["r2 a"], "r3": ["r3 a"], "r1 a": ["r1"], "r2 a": ["r2"], "r3 a": ["r3"]}
    )
    server.captcha_first = 2
    args = cli_args(tmp_path, server.base_url, ["r1", "r2", "r3"], "--max-depth", "1")
    args += ["--breaker-threshold", "2", "--breaker-cooldown", "0.5", "--concurrency", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "circuit breaker OPEN for google: 2 consecutive blocked responses" in output
    assert "circuit breaker closed for google" in output
    hits = server.hits
    assert hits[2].at - hits[1].at >= 0.4  # the engine paused (the breaker opened after hits[1])
    # the two roots blocked at their own request fetched nothing: no events, not completed
    assert "2 of 3 roots fetched nothing (their own request failed) and are not stored as completed" in output
    events = read_events(tmp_path / "events.jsonl")
    got = nodes(events)
    assert {e["status"] for e in got.values()} == {"ok"} and len({e["root"] for e in got.values()}) == 1
    (done,) = [e for e in events if e["type"] == "crawl_completed"]
    (started,) = [e for e in events if e["type"] == "crawl_started"]
    assert done["root"] == started["root"] and done["n_failed"] == 0
    blocked = {h.query for h in hits[:2]}
    assert blocked == {"r1", "r2", "r3"} - {done["root"]}


def closed_port() -> int:
    """A port nothing listens on: a request to it fails at once, as offline."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_crawl_that_fetched_nothing_is_not_completed_and_exits_1(tmp_path: Path) -> None:
    """Issue 40: offline, a crawl ended "error=1 ... done yes", exit 0, and stored
    crawl_completed; `report autocomplete` then found no completed crawl."""
    url = f"http://127.0.0.1:{closed_port()}"
    args = cli_args(tmp_path, url, ["alpha", "beta"], "--retries", "1", "--study", "mystudy")
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    assert "fetched nothing: every request failed, so it is not stored as completed" in output
    assert "Is this machine online and the engine reachable" in output
    assert output.count("no: fetched nothing") == 2
    events = tmp_path / "events.jsonl"
    assert not events.exists() or read_events(events) == []  # nothing went to the store
    (info,) = CrawlStore(tmp_path / "state").list()
    assert info.finished_at is not None and [r["kind"] for r in info.records()] == ["failed", "failed"]
    listed = runner.invoke(app, ["crawl", "list", "--state-dir", str(tmp_path / "state")], terminal_width=200)
    assert "0/2 (2 fetched nothing)" in listed.output

    again = runner.invoke(app, args, terminal_width=200)  # the same command: a new crawl, not a resume
    assert again.exit_code == 1 and "already finished" not in again.output
    assert len(CrawlStore(tmp_path / "state").list()) == 2


def test_a_request_queued_behind_the_answer_that_opened_the_breaker_waits_out_the_pause(
    server: FakeSuggestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one request in flight, the next clears the breaker and the rate limiter, then
    queues for the concurrency slot. If the answer it queued behind is the CAPTCHA that
    opens the breaker, it must not go out as soon as it gets the slot."""
    server.captcha_first = 1
    server.hold_from = 1  # the first request waits for release(): the second queues meanwhile
    cooldown = 0.5
    polite = Politeness(
        rate=100.0,
        jitter=0.0,
        concurrency=1,
        max_retries=0,
        timeout_s=5.0,
        breaker_threshold=1,
        breaker_cooldown_s=cooldown,
        seed=5,
    )
    adapters = resolve(["google"], endpoints={"google": server.base_url})

    async def go() -> tuple[float, list[fetch.Fetched]]:
        async with open_clients(adapters, polite) as clients:
            client = clients["google"]
            real_wait = client.limiter.wait
            cleared = asyncio.Event()

            async def wait() -> None:  # set once the second request has its rate slot
                await real_wait()
                if client.requests == 1:
                    cleared.set()

            monkeypatch.setattr(client.limiter, "wait", wait)
            first = asyncio.create_task(client.fetch("alpha"))
            deadline = time.monotonic() + 10
            while not server.hits:  # the first request is held at the server, in its slot
                assert time.monotonic() < deadline and not first.done(), "the first request never came"
                await asyncio.sleep(0.005)
            second = asyncio.create_task(client.fetch("alpha beta"))
            # from clearing the limiter, the second request runs on to wait for the slot
            # without yielding to this task: once this wakes, it is queued for the slot
            await asyncio.wait_for(cleared.wait(), 10)
            released = time.monotonic()
            server.release()
            return released, list(await asyncio.gather(first, second))

    released, (first, second) = asyncio.run(go())
    assert first.parsed.status == "blocked" and second.parsed.status == "ok"
    hits = server.hits
    assert [h.query for h in hits] == ["alpha", "alpha beta"]
    assert hits[1].at - released >= cooldown  # the CAPTCHA was answered after the release


def journaled_queries(state: Path, crawl_id: str) -> list[str]:
    path = state / crawl_id / "journal.jsonl"
    if not path.exists():
        return []
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.endswith(b"}")]
    return [r["query"] for r in lines if r["kind"] == "node"]


def test_killed_crawl_resumes_without_requesting_done_nodes(
    tmp_path: Path, server: FakeSuggestServer
) -> None:
    server.hold_from = 5  # the 5th request hangs: the crawl is killed while waiting for it
    args = [*cli_args(tmp_path, server.base_url, ["alpha"]), "--max-depth", "3", "--concurrency", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditstream", *args, "--crawl-id", "ac-kill"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: len(journaled_queries(tmp_path / "state", "ac-kill")) >= 4, 60, "4 journaled nodes")
        wait_for(lambda: len(server.hits) >= 5, 30, "the held request")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        assert proc.stderr is not None
        proc.stderr.close()
    done_before = journaled_queries(tmp_path / "state", "ac-kill")
    n_before = len(server.hits)
    server.hold_from = None
    server.release()

    result = runner.invoke(app, args)  # the same command: resumes the unfinished crawl
    assert result.exit_code == 0, result.output
    assert "crawling: crawl ac-kill" in result.output
    asked_after = [h.query for h in server.hits[n_before:]]
    assert not set(asked_after) & set(done_before), "a done node was requested again"
    assert sorted(done_before + asked_after) == sorted(n.query for n in EXPECTED_DEPTH_3)
    events = read_events(tmp_path / "events.jsonl")
    assert {(e["query"], e["parent"], e["depth"]) for e in nodes(events).values()} == expected_rows(
        EXPECTED_DEPTH_3
    )
    (done,) = [e for e in events if e["type"] == "crawl_completed"]
    assert done["crawl_id"] == "ac-kill" and done["n_nodes"] == 7 and done["n_edges"] == EDGES_DEPTH_3
    assert CrawlStore(tmp_path / "state").info("ac-kill").finished_at is not None


def test_cancelled_crawl_resumes_by_id(tmp_path: Path, server: FakeSuggestServer) -> None:
    """Ctrl-C cancels the crawl task; ``--resume`` picks it up from the journal."""
    store = CrawlStore(tmp_path / "state")
    params = CrawlParams(
        crawl_id="ac-cancel", roots=("alpha",), engines=(("google", "firefox"),), max_depth=3
    )
    adapters = resolve(["google"], {"google": "firefox"}, {"google": server.base_url})

    async def crawl_until_cancelled() -> None:
        sink = JsonlSink(tmp_path / "events.jsonl")
        with store.create(params) as journal:
            task = asyncio.create_task(
                run_crawl(
                    journal, adapters, archive=Archive(tmp_path / "archive"), sink=sink, politeness=FAST
                )
            )
            deadline = time.monotonic() + 30
            while len(server.hits) < 4 and not task.done():
                assert time.monotonic() < deadline, "the crawl did not start"
                await asyncio.sleep(0.005)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await sink.aclose()

    asyncio.run(crawl_until_cancelled())
    done_before = journaled_queries(tmp_path / "state", "ac-cancel")
    assert 0 < len(done_before) < 7
    n_before = len(server.hits)
    args = [
        "crawl",
        "autocomplete",
        "--resume",
        "ac-cancel",
        "--endpoint",
        f"google={server.base_url}",
        "--out",
        str(tmp_path / "events.jsonl"),
        "--state-dir",
        str(tmp_path / "state"),
        "--archive-dir",
        str(tmp_path / "archive"),
        "--no-progress",
        "--rate",
        "20",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    asked_after = [h.query for h in server.hits[n_before:]]
    assert not set(asked_after) & set(done_before)
    assert set(journaled_queries(tmp_path / "state", "ac-cancel")) == {n.query for n in EXPECTED_DEPTH_3}
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "already finished" in again.output


def test_reparse_rebuilds_events_with_the_fixed_parser(
    tmp_path: Path, server: FakeSuggestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = parsers.PARSERS["psy-ab"]

    def buggy(text: str) -> Any:  # "forgets" the last suggestion
        echoed, entries, n = real(text)
        return echoed, entries[:-1], n

    monkeypatch.setitem(parsers.PARSERS, "psy-ab", buggy)
    _, crawled = crawl(tmp_path, server.base_url, ("alpha",), crawl_id="ac-bug", max_depth=1)
    monkeypatch.setitem(parsers.PARSERS, "psy-ab", real)
    assert len(nodes(crawled)["alpha"]["suggestions"]) == 2

    out = tmp_path / "reparsed.jsonl"
    result = runner.invoke(
        app,
        [
            "crawl",
            "reparse",
            "--crawl-id",
            "ac-bug",
            "--out",
            str(out),
            "--state-dir",
            str(tmp_path / "state"),
            "--archive-dir",
            str(tmp_path / "archive"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert set(nodes(crawled)) == {"alpha", "alpha beta"}  # the buggy parse lost "alpha gamma"
    assert "re-parsed 2 nodes: 2 changed" in " ".join(result.output.split())
    fixed = read_events(out)
    assert {e["event_id"] for e in fixed} == {e["event_id"] for e in crawled}  # same ids
    assert [s["text"] for s in nodes(fixed)["alpha"]["suggestions"]] == ["alpha", "alpha beta", "alpha gamma"]
    (done,) = [e for e in fixed if e["type"] == "crawl_completed"]
    (old,) = [e for e in crawled if e["type"] == "crawl_completed"]
    assert done["n_edges"] == old["n_edges"] + 2 and done["n_nodes"] == old["n_nodes"] == 2


def test_cli_posts_to_ingest_and_reparse_can_post_a_corrected_copy(
    tmp_path: Path, server: FakeSuggestServer
) -> None:
    server.ingest_failures.append(503)  # the first post is retried with the same event ids
    args = cli_args(tmp_path, server.base_url, ["alpha"], "--max-depth", "1", "--crawl-id", "ac-post")
    out_at = args.index("--out")
    del args[out_at : out_at + 2]
    result = runner.invoke(app, [*args, "--url", server.base_url, "--api-key", server.api_key])
    assert result.exit_code == 0, result.output
    posted = list(server.ingested)
    for event in posted:
        EVENT.validate_python(event)
    assert [e["type"] for e in posted].count("autocomplete_node") == 3
    assert posted[0]["type"] == "crawl_started" and posted[-1]["type"] == "crawl_completed"
    assert len({e["event_id"] for e in posted}) == len(posted) == 5

    state = ["--state-dir", str(tmp_path / "state"), "--archive-dir", str(tmp_path / "archive")]
    reposted = runner.invoke(
        app,
        [
            "crawl",
            "reparse",
            "--crawl-id",
            "ac-post",
            "--post",
            "--as-crawl-id",
            "ac-post-r1",
            *state,
            "--url",
            server.base_url,
            "--api-key",
            server.api_key,
        ],
    )
    assert reposted.exit_code == 0, reposted.output
    copy = server.ingested[len(posted) :]
    assert {e["crawl_id"] for e in copy} == {"ac-post-r1"} and len(copy) == 5
    assert not {e["event_id"] for e in copy} & {e["event_id"] for e in posted}

    listed = runner.invoke(app, ["crawl", "list", "--state-dir", str(tmp_path / "state")], terminal_width=200)
    assert "ac-post" in listed.output and "1/1" in listed.output


def test_ingest_refusing_events_stops_the_crawl_before_journaling_them(
    tmp_path: Path, server: FakeSuggestServer
) -> None:
    from collectors.common.exceptions import CrawlError
    from collectors.common.sinks import IngestSink

    store = CrawlStore(tmp_path / "state")
    params = CrawlParams(crawl_id="ac-401", roots=("alpha", "alpha beta"), engines=(("google", "psy-ab"),))
    adapters = resolve(["google"], endpoints={"google": server.base_url})

    async def go() -> None:
        with store.create(params) as journal:
            sink = IngestSink(server.base_url, "wrong-key", max_retry_s=1.0)
            await run_crawl(journal, adapters, archive=Archive(tmp_path / "a"), sink=sink, politeness=FAST)

    with pytest.raises(CrawlError, match="401"):
        asyncio.run(go())
    with store.open("ac-401") as journal:
        assert journal.records == []  # nothing counts as done that was not delivered


def test_scheduled_rounds_get_their_own_crawl_ids(
    tmp_path: Path, server: FakeSuggestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import UTC, datetime, timedelta

    from collectors.autocomplete import schedule

    real = schedule.run_on_schedule
    clock = [datetime(2018, 6, 27, 8, 59, tzinfo=UTC)]

    async def sleep(seconds: float) -> None:
        clock[0] += timedelta(seconds=seconds)

    async def two_rounds(times: Any, job: Any, *, notify: Any) -> None:
        await real(times, job, notify=notify, now=lambda: clock[0], sleep=sleep, runs=2)

    monkeypatch.setattr(schedule, "run_on_schedule", two_rounds)
    args = cli_args(tmp_path, server.base_url, ["alpha"], "--max-depth", "1", "--schedule", "18:00,09:00")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "next crawl round at 2018-06-27 09:00 UTC" in result.output
    assert "next crawl round at 2018-06-27 18:00 UTC" in result.output
    events = read_events(tmp_path / "events.jsonl")
    rounds = {e["crawl_id"] for e in events if e["type"] == "crawl_completed"}
    assert len(rounds) == 2 and all(r.startswith("ac-") for r in rounds)
    assert all(i.finished_at for i in CrawlStore(tmp_path / "state").list())


def test_ctrl_c_saves_state_and_says_how_to_resume(tmp_path: Path, server: FakeSuggestServer) -> None:
    server.hold_from = 3
    args = [*cli_args(tmp_path, server.base_url, ["alpha"]), "--concurrency", "1", "--crawl-id", "ac-int"]
    # Ctrl-C as a terminal user has it: SIGINT at its default. A suite started as a background
    # job of a non-interactive shell (`cmd &`) runs with SIGINT ignored, and a child inherits
    # that, so without this the crawler would (rightly) ignore the signal and the test hang.
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditstream", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        wait_for(lambda: len(journaled_queries(tmp_path / "state", "ac-int")) >= 2, 60, "2 journaled nodes")
        wait_for(lambda: len(server.hits) >= 3, 30, "the held request")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 130, err
    assert "interrupted; state saved: resume with --resume ac-int" in " ".join(err.decode().split())
    assert len(journaled_queries(tmp_path / "state", "ac-int")) == 2
    assert CrawlStore(tmp_path / "state").info("ac-int").finished_at is None
