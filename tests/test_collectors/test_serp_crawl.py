"""Lock-step SERP crawls against the fake engine (``tests/fakes/serp_engine.py``).

Rounds are 0.5 s apart, so each study takes a few seconds; waits are conditions with
deadlines. What the crawler decides is checked exactly, what a loaded machine does is not:

- punctuality is a property of the schedule: every round's slot is on the study's grid
  and every first attempt is planned for that slot exactly (``planned_at``,
  ``planned_skew_ms == 0``), which ``assert_punctual`` checks without any tolerance;
- measured times (``sent_at``, ``late_ms``, the engine's arrival times) are only bounded
  by what the study itself allows: a round's requests go out before its deadline
  (``round_timeout``, 80% of the spacing). An idle run sends within a few ms, so these
  bounds are more than 5x what it measures; how late a loaded machine really sends is a
  figure, measured in ``bench/serp_skew.py``, not asserted here;
- the fake engine runs in a thread of this process and may log a request late: it
  sorts requests into rounds by its own rule (``FakeEngineScript.round_at``).
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from pydantic import TypeAdapter
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.common.archive import Archive
from collectors.common.exceptions import CrawlError, CrawlStateError
from collectors.common.journal import read_journal
from collectors.common.sinks import JsonlSink
from collectors.serp import parser
from collectors.serp.reparse import ReparseStats, reparse_events
from collectors.serp.rulebook import load_rules
from collectors.serp.runner import crawl_study
from collectors.serp.state import StudyStore
from collectors.serp.study import Study, load_study
from schemas.event_types import AnyEvent
from schemas.events import KNOWN_LAYOUT
from tests.fakes.serp_engine import CAPTCHA, SLOW, FakeSerpEngine, Hit
from tests.fakes.serp_study import PROFILES, PROFILES_4, UA, crawl, script_for, study_file
from tests.helpers import read_events

EVENT = TypeAdapter(AnyEvent)
runner = CliRunner()


@pytest.fixture
def engine() -> Iterator[FakeSerpEngine]:
    with FakeSerpEngine() as e:
        yield e


def arrivals_by_round(engine: FakeSerpEngine) -> dict[int, list[Hit]]:
    """The engine's hits by the round it served them in (its own rule, ``round_at``)."""
    rounds: dict[int, list[Hit]] = defaultdict(list)
    for hit in engine.hits:
        k = engine.script.round_at(hit.at)
        assert k is not None
        rounds[k].append(hit)
    return rounds


def by_round(events: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    rounds: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for e in events:
        assert e["profile_id"] not in rounds[e["round_id"]], "two events for one (round, profile)"
        rounds[e["round_id"]][e["profile_id"]] = e
    return rounds


def sent(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["sent_at"]).timestamp()


def journal(tmp_path: Path, study_id: str) -> list[dict[str, Any]]:
    return read_journal(tmp_path / "state" / study_id / "journal.jsonl")


def organic(event: dict[str, Any]) -> list[str]:
    return [r["url"] for r in event["results"] if r["type"] == "organic"]


def iso_ms(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")


def assert_punctual(record: dict[str, Any], study: Study, start: float) -> None:
    """The round's schedule, exactly: its slot on the grid, every first attempt planned for
    it. Measured times are only bounded by the study's own deadline (see the module doc)."""
    slot = start + record["round"] * study.study.spacing
    assert record["slot"] == iso_ms(slot)
    firsts = [p for p in record["profiles"] if p["attempts"] == 1]
    assert firsts and all(p["planned_at"] == record["slot"] for p in firsts)
    if len(firsts) == len(record["profiles"]):
        assert record["planned_skew_ms"] == 0.0
    for p in record["profiles"]:
        assert p["planned_at"] >= record["slot"]  # a retry is planned after its backoff
        assert 0 <= sent_iso(p["sent_at"]) - slot < study.round_timeout  # sent before the deadline
    assert 0 <= record["late_ms"] < study.round_timeout * 1000
    assert record["skew_ms"] < study.round_timeout * 1000


def sent_iso(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


@pytest.mark.timing  # fetch deadlines of a few hundred ms: run alone, after the rest
def test_lock_step_rounds_issue_every_profile_within_a_small_skew(
    tmp_path: Path, engine: FakeSerpEngine
) -> None:
    path, start = study_file(tmp_path)
    study = load_study(path)
    engine.script = script_for(study, start)
    summary = crawl(study, engine, tmp_path)

    assert summary.finished and len(summary.rounds) == 6 and not summary.missed and not summary.undelivered
    rounds = by_round(read_events(tmp_path / "events.jsonl"))
    assert sorted(rounds) == [f"lockstep-r{k:04d}" for k in range(6)]
    records = {r["round_id"]: r for r in journal(tmp_path, "lockstep") if r["kind"] == "round"}
    for k, (round_id, snaps) in enumerate(sorted(rounds.items())):
        assert set(snaps) == {p for p, _, _ in PROFILES_4}
        assert {e["status"] for e in snaps.values()} == {"ok"}
        assert {e["query"] for e in snaps.values()} == {study.queries[k % 2].text}
        skew = max(map(sent, snaps.values())) - min(map(sent, snaps.values()))
        assert records[round_id]["skew_ms"] == pytest.approx(skew * 1000, abs=0.5)  # journal == stream side
        assert_punctual(records[round_id], study, start)
        assert records[round_id]["planned_skew_ms"] == 0.0  # no retries here: one planned instant
        # ground truth: each page's organic results are exactly what the engine served it
        truth = {(s.profile, s.round): list(s.organic) for s in engine.served}
        for profile, event in snaps.items():
            assert organic(event) == truth[profile, k]
            assert event["result_estimate"] == 123_000_000
            assert event["raw_ref"].startswith("sha256:")
        assert {e["role"] for e in snaps.values()} == {"control", "control_twin", "treatment"}
        assert snaps["login"]["treatment"] == "logged_in" and snaps["control"]["treatment"] == ""
    # the server saw each round's requests, one per profile, between its slot and deadline
    arrivals = arrivals_by_round(engine)
    assert sorted(arrivals) == list(range(6))
    for k, hits in arrivals.items():
        assert sorted(h.profile for h in hits) == sorted(p for p, _, _ in PROFILES_4)
        slot = start + k * 0.5
        assert all(slot <= h.at < slot + study.round_timeout for h in hits)
    # each profile kept its own cookies (the engine's NID came back from its second request on)
    for hit in engine.hits:
        assert hit.user_agent == UA and hit.accept_language == "en-US,en;q=0.9"
        assert hit.cookies["profile"] == hit.profile
    for profile, _, _ in PROFILES_4:
        nid = ["NID" in h.cookies for h in engine.hits if h.profile == profile]
        assert nid == [False] + [True] * 5, (profile, nid)


def test_a_slow_profile_fails_alone_and_never_shifts_the_others(
    tmp_path: Path, engine: FakeSerpEngine
) -> None:
    # 1 s rounds: the others must answer within the deadline (0.8 s) while a Chromium test
    # may be starting beside this one (pytest-xdist, two cores)
    path, start = study_file(tmp_path, study_id="slow", spacing=1.0)
    study = load_study(path)
    engine.script = script_for(study, start)
    engine.delays["boston"] = 2.0  # beyond the round deadline (80% of 1 s)
    summary = crawl(study, engine, tmp_path)

    assert len(summary.rounds) == 6 and summary.statuses()["boston"] == {"error": 6}
    rounds = by_round(read_events(tmp_path / "events.jsonl"))
    for k, (_, snaps) in enumerate(sorted(rounds.items())):
        assert snaps["boston"]["status"] == "error" and snaps["boston"]["results"] == []
        others = [e for p, e in snaps.items() if p != "boston"]
        assert {e["status"] for e in others} == {"ok"}
        slot = start + k * 1.0
        times = [sent(e) for e in snaps.values()]  # boston too: sent with the others, before the deadline
        assert all(slot <= t < slot + study.round_timeout for t in times)
    # every request, the slow profile's included, reached the engine in its own round
    arrivals = arrivals_by_round(engine)
    assert sorted(arrivals) == list(range(6))
    for k, hits in arrivals.items():
        assert sorted(h.profile for h in hits) == sorted(p for p, _, _ in PROFILES_4)
        assert all(start + k * 1.0 <= h.at < start + k * 1.0 + study.round_timeout for h in hits)
    records = [r for r in journal(tmp_path, "slow") if r["kind"] == "round"]
    for r in records:  # the slow profile was planned for the slot like the others
        assert_punctual(r, study, start)
        assert r["planned_skew_ms"] == 0.0
    record = records[0]
    boston = next(p for p in record["profiles"] if p["profile_id"] == "boston")
    assert boston["detail"] == "timeout" and boston["http_status"] == 0 and boston["raw_ref"] == ""


def test_a_failed_fetch_is_retried_within_the_round_or_recorded_as_failed(
    tmp_path: Path, engine: FakeSerpEngine
) -> None:
    # 2 s apart: login's three attempts (backoff 50-75 ms, then 100-150 ms) fit in the 1.6 s
    # deadline even when the crawler or the engine's thread is held up for a few hundred ms
    spacing = 2.0
    path, start = study_file(tmp_path, study_id="retry", rounds=2, spacing=spacing, extra="retries = 2")
    study = load_study(path)
    engine.script = script_for(study, start)
    engine.fail("twin", 503)  # once: the retry succeeds
    engine.fail("login", 503, 503, 503)  # beyond the 2 retries: an error
    engine.fail("boston", CAPTCHA)  # a block is not retried
    crawl(study, engine, tmp_path)

    first = by_round(read_events(tmp_path / "events.jsonl"))["retry-r0000"]
    statuses = {p: e["status"] for p, e in first.items()}
    assert statuses == {"control": "ok", "twin": "ok", "login": "error", "boston": "captcha"}
    arrivals = arrivals_by_round(engine)
    assert sorted(arrivals) == [0, 1]
    attempts_seen = {p: sum(h.profile == p for h in arrivals[0]) for p, _, _ in PROFILES_4}
    assert attempts_seen == {"control": 1, "twin": 2, "login": 3, "boston": 1}
    assert all(h.at < start + study.round_timeout for h in arrivals[0])  # retries inside the deadline
    assert sorted(h.profile for h in arrivals[1]) == sorted(p for p, _, _ in PROFILES_4)
    assert all(h.at - (start + spacing) < study.round_timeout for h in arrivals[1])
    # sent_at is the start of the recorded attempt, so the retry shows in the round's skew
    assert sent(first["twin"]) >= sent(first["control"]) + 0.04
    record = next(r for r in journal(tmp_path, "retry") if r["kind"] == "round" and r["round"] == 0)
    attempts = {p["profile_id"]: (p["attempts"], p["http_status"]) for p in record["profiles"]}
    assert attempts == {"control": (1, 200), "twin": (2, 200), "login": (3, 503), "boston": (1, 429)}
    assert record["skew_ms"] >= 40
    assert_punctual(record, study, start)
    planned = {p["profile_id"]: sent_iso(p["planned_at"]) for p in record["profiles"]}
    slot = sent_iso(record["slot"])
    assert planned["control"] == planned["boston"] == slot  # answered at once: planned for the slot
    assert planned["twin"] >= slot + 0.05 and planned["login"] >= slot + 0.05  # after a backoff (>= 50 ms)
    assert record["planned_skew_ms"] == pytest.approx((max(planned.values()) - slot) * 1000, abs=1)
    second = by_round(read_events(tmp_path / "events.jsonl"))["retry-r0001"]
    assert {e["status"] for e in second.values()} == {"ok"}


def run_cli(path: Path, tmp_path: Path, engine: FakeSerpEngine, *extra: str) -> list[str]:
    return [
        "crawl",
        "serp",
        "--study",
        str(path),
        "--out",
        str(tmp_path / "events.jsonl"),
        "--state-dir",
        str(tmp_path / "state"),
        "--archive-dir",
        str(tmp_path / "archive"),
        "--endpoint",
        f"google={engine.base_url}",
        *extra,
    ]


# ``python -m auditstream CLI-ARGS``, told when to run: importing the CLI and the crawler takes
# seconds on a loaded machine (13 s beside two CPU burners), so a study whose start is fixed
# before the process starts can see its first slots pass while Python imports (they are then
# journaled missed, as a crawler started late must). This one imports first, says so, and runs
# the command once a line comes on stdin: the test fixes the study's start only then.
PREIMPORTED_CLI = """
import runpy, sys
import auditstream.cli, collectors.common.endpoints, collectors.serp.fetchers
import collectors.serp.runner, collectors.serp.study
print("imported", flush=True)
sys.stdin.readline()
runpy.run_module("auditstream", run_name="__main__", alter_sys=True)
"""


def start_preimported(args: list[str], timeout: float = 120) -> subprocess.Popen[bytes]:
    """A ``PREIMPORTED_CLI`` process for ``args``, returned once its imports are done."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PREIMPORTED_CLI, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    readable, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if readable else b""
    if line != b"imported\n":
        proc.kill()
        proc.wait(10)
        raise AssertionError(f"the crawler did not import within {timeout}s: {proc.stderr.read().decode()}")
    return proc


def test_a_killed_crawler_resumes_at_the_next_round_without_duplicates(
    tmp_path: Path, engine: FakeSerpEngine
) -> None:
    # 1 s apart, so round 3 stays open 0.8 s (until its deadline): the kill lands inside it with
    # room to spare. The study starts 3-4 s after the crawler process has imported what it runs
    # (``start_preimported``): the time to read the study and open its state, not to start Python.
    spacing, n_rounds = 1.0, 6
    engine.fail("boston", 200, 200, 200, SLOW)  # round 3 stays open until its deadline: kill it there
    args = run_cli(tmp_path / "killed.toml", tmp_path, engine)
    proc = start_preimported(args)
    try:
        path, start = study_file(tmp_path, study_id="killed", rounds=n_rounds, lead_s=3.0, spacing=spacing)
        study = load_study(path)
        engine.script = script_for(study, start)
        assert proc.stdin is not None
        proc.stdin.write(b"run\n")
        proc.stdin.close()
        deadline = time.monotonic() + 30
        while sum(h.profile == "boston" for h in engine.hits) < 4:  # round 3 under way (fine polling:
            assert time.monotonic() < deadline and proc.poll() is None, "round 3 never started"
            time.sleep(0.005)  # wait-ok: the round lasts 0.8 s and the kill must land inside it)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    killed_at = time.time()
    before = journal(tmp_path, "killed")
    assert {r["round"] for r in before if r["kind"] == "round"} == {0, 1, 2}
    assert 3 in {r["round"] for r in before if r["kind"] == "round_started"}

    result = runner.invoke(app, args)  # the same command resumes the study
    assert result.exit_code == 0, result.output
    records = journal(tmp_path, "killed")
    done = {r["round"]: r for r in records if r["kind"] == "round"}
    missed = {r["round"]: r["reason"] for r in records if r["kind"] == "missed"}
    assert "interrupted" in missed[3]
    assert not set(done) & set(missed) and set(done) | set(missed) == set(range(n_rounds))
    first_after = min(k for k in done if k > 3)
    assert start + first_after * spacing >= killed_at  # resumed at a slot still ahead, not a passed one
    assert all(k in done for k in range(first_after, n_rounds))
    # every round, before and after the kill, was planned for its slot on the same grid
    for r in done.values():
        assert_punctual(r, study, start)

    rounds = by_round(read_events(tmp_path / "events.jsonl"))
    assert sorted(rounds) == [f"killed-r{k:04d}" for k in sorted(done)]  # nothing of round 3
    assert all(set(snaps) == {p for p, _, _ in PROFILES_4} for snaps in rounds.values())  # whole rounds
    assert f"study killed: 3 of {n_rounds} rounds recorded, 0 missed" in " ".join(result.output.split())
    assert "finished" in result.output
    # the cookie jars survived the kill: the engine's NID cookie was sent from the first request on
    assert all("NID" in h.cookies for h in engine.hits if h.at > killed_at)


def test_a_cancelled_crawl_resumes_and_re_sends_rounds_not_yet_delivered(
    tmp_path: Path, engine: FakeSerpEngine
) -> None:
    path, start = study_file(tmp_path, study_id="cancel", rounds=8)
    study = load_study(path)
    engine.script = script_for(study, start)
    engine.fail("boston", 200, 200, 200, SLOW)  # round 3 stays open until its deadline: cancel it there

    class FlakySink(JsonlSink):
        """Writes every batch, but reports the second and third as failed (as a crash after a
        write, before the journal, would): those rounds are sent again with the same ids."""

        calls = 0

        async def emit(self, events: Sequence[dict[str, Any]]) -> None:
            await super().emit(events)
            FlakySink.calls += 1
            if FlakySink.calls in (2, 3):
                raise CrawlError("ingest answered 503")

    async def until_cancelled() -> None:
        sink = FlakySink(tmp_path / "events.jsonl")
        task = asyncio.create_task(
            crawl_study(
                study,
                state_dir=tmp_path / "state",
                archive_dir=tmp_path / "archive",
                sink=sink,
                endpoint=engine.base_url,
            )
        )
        deadline = time.monotonic() + 30
        while len(engine.hits) < 4 * 4 and not task.done():
            assert time.monotonic() < deadline, "the crawl did not run"
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await sink.aclose()

    asyncio.run(until_cancelled())
    summary = crawl(study, engine, tmp_path)
    assert summary.finished and not summary.undelivered
    assert len(summary.rounds) + len(summary.missed) == 8 and summary.missed
    lines = (tmp_path / "events.jsonl").read_bytes().splitlines()
    events = read_events(tmp_path / "events.jsonl")
    assert len(lines) > len(events)  # some rounds were written twice ...
    rounds = by_round(events)  # ... with identical events under the same ids
    assert len(rounds) == len(summary.rounds)
    assert all(len(snaps) == 4 for snaps in rounds.values())


def test_a_changed_study_is_refused_and_a_finished_one_is_not_run_again(
    tmp_path: Path, engine: FakeSerpEngine
) -> None:
    path, start = study_file(tmp_path, study_id="same", rounds=2, profiles=PROFILES)
    study = load_study(path)
    engine.script = script_for(study, start)
    crawl(study, engine, tmp_path)
    n_hits = len(engine.hits)
    again = crawl(study, engine, tmp_path)
    assert again.finished and len(engine.hits) == n_hits
    changed = path.read_text().replace('text = "coffee"', 'text = "tea"')
    path.write_text(changed)
    with pytest.raises(CrawlStateError, match="give the changed study a new id"):
        crawl(load_study(path), engine, tmp_path)


def metric_value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_reparse_rebuilds_the_same_events_and_applies_fixed_rules(
    tmp_path: Path, engine: FakeSerpEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, start = study_file(tmp_path, study_id="reparse", rounds=2, profiles=PROFILES)
    study = load_study(path)
    engine.script = script_for(study, start)
    engine.fail("twin", CAPTCHA)
    real = load_rules("google")
    broken = real.model_copy(update={"organic": real.organic.model_copy(update={"anchor": "a[href] h6"})})
    monkeypatch.setattr(parser, "load_rules", lambda engine: broken)  # the crawl ran with rules missing one
    unknown_before = metric_value("auditstream_crawler_serp_pages_total", engine="google", layout="unknown")
    summary = crawl(study, engine, tmp_path)
    emitted = sorted(read_events(tmp_path / "events.jsonl"), key=lambda e: e["event_id"])
    assert not any(organic(e) for e in emitted)
    # the layout-drift signal: every parsed page is one the (broken) rules do not know
    parsed_pages = [e for e in emitted if e["status"] == "ok"]
    assert len(parsed_pages) == 5 and all(e["coverage"] < KNOWN_LAYOUT for e in parsed_pages)
    assert summary.unknown_layouts == 5
    after = metric_value("auditstream_crawler_serp_pages_total", engine="google", layout="unknown")
    assert after - unknown_before == 5

    monkeypatch.setattr(parser, "load_rules", load_rules)  # fixed
    stats = ReparseStats()
    with StudyStore(tmp_path / "state").open_saved("reparse") as saved:
        fixed = sorted(
            reparse_events(saved, Archive(tmp_path / "archive"), stats), key=lambda e: e["event_id"]
        )
    assert [e["event_id"] for e in fixed] == [e["event_id"] for e in emitted]
    assert (stats.rounds, stats.snapshots, stats.changed, stats.unarchived) == (2, 6, 5, 0)
    truth = {(s.profile, s.round): list(s.organic) for s in engine.served}
    for event in fixed:
        EVENT.validate_python(event)
        k = int(event["round_id"].rsplit("-r", 1)[1])
        if event["status"] == "ok":
            assert organic(event) == truth[event["profile_id"], k]
            assert event["coverage"] == 1.0  # the fixed rules know every block of the page
    assert {e["status"] for e in fixed if e["profile_id"] == "twin"} == {"captcha", "ok"}

    out = tmp_path / "reparsed.jsonl"
    args = ["crawl", "reparse", "--study", "reparse", "--state-dir", str(tmp_path / "state")]
    result = runner.invoke(app, [*args, "--archive-dir", str(tmp_path / "archive"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "re-parsed 6 snapshots of 2 rounds: 5 changed" in " ".join(result.output.split())
    assert sorted((json.loads(x) for x in out.read_text().splitlines()), key=lambda e: e["event_id"]) == fixed
    dirs = ["--archive-dir", str(tmp_path / "archive"), "--out", str(tmp_path / "v2.jsonl")]
    renamed = runner.invoke(app, [*args, *dirs, "--as-crawl-id", "reparse-v2"])
    assert renamed.exit_code == 0, renamed.output
    v2 = read_events(tmp_path / "v2.jsonl")
    assert {e["round_id"] for e in v2} == {"reparse-v2-r0000", "reparse-v2-r0001"}
    assert not {e["event_id"] for e in v2} & {e["event_id"] for e in fixed}
    too_long = runner.invoke(app, [*args, *dirs, "--as-crawl-id", "x" * 63])
    assert too_long.exit_code == 2 and "--as-crawl-id" in too_long.output


def test_crawl_serp_cli_posts_to_ingest_and_reports_the_skew(tmp_path: Path, engine: FakeSerpEngine) -> None:
    path, start = study_file(tmp_path, study_id="posted", rounds=3, profiles=PROFILES)
    engine.script = script_for(load_study(path), start)
    args = [
        "crawl",
        "serp",
        "--study",
        str(path),
        "--url",
        engine.base_url,
        "--api-key",
        engine.api_key,
        "--endpoint",
        f"google={engine.base_url}",
        "--data-dir",
        str(tmp_path / "data"),
    ]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "posted-r0000 'coffee': skew" in text and "ok=3" in text
    assert "rounds: 3 recorded, 0 missed, 0 undelivered of 3; skew median" in text and "finished" in text
    assert len(engine.ingested) == 9 and {e["study_id"] for e in engine.ingested} == {"posted"}
    assert (tmp_path / "data" / "serp" / "state" / "posted" / "journal.jsonl").exists()
    assert any((tmp_path / "data" / "serp" / "archive").iterdir())
