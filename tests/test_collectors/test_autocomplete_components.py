"""Engines table, archive, crawl state, events and schedule: the small pure-ish pieces."""

from __future__ import annotations

import asyncio
import gzip
from datetime import UTC, datetime, time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import TypeAdapter

from collectors.autocomplete.bfs import Node
from collectors.autocomplete.engines import resolve
from collectors.autocomplete.events import completed_event, node_event, node_event_id, started_event
from collectors.autocomplete.parsers import ParsedSuggestion
from collectors.autocomplete.schedule import next_run, parse_schedule, run_on_schedule
from collectors.autocomplete.state import CrawlParams, CrawlStore, read_roots
from collectors.common.archive import Archive
from collectors.common.endpoints import parse_pairs
from collectors.common.exceptions import ArchiveError, CrawlConfigError, CrawlStateError
from schemas.event_types import AnyEvent

EVENT = TypeAdapter(AnyEvent)


def test_default_adapters_build_the_real_urls() -> None:
    google, bing = resolve(["google", "bing"], crawl_id="ac-1")
    assert google.url("charlie baker") == (
        "https://www.google.com/complete/search?sclient=psy-ab&hl=en&q=charlie%20baker"
    )
    parts = urlsplit(bing.url("charlie baker's"))
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://www.bing.com/AS/Suggestions"
    qs = parse_qs(parts.query)
    assert qs["mkt"] == ["en-US"] and qs["qry"] == ["charlie baker's"] and len(qs["cvid"][0]) == 32


def test_alternative_formats_and_endpoint_overrides() -> None:
    google, bing = resolve(
        ["google", "bing"],
        {"google": "firefox", "bing": "osjson"},
        {"google": "http://127.0.0.1:9/", "bing:osjson": "http://127.0.0.1:9/other/path"},
        lang="de",
    )
    assert google.url("a b") == "http://127.0.0.1:9/complete/search?client=firefox&q=a%20b"
    assert bing.url("a") == "http://127.0.0.1:9/other/path?query=a"


@pytest.mark.parametrize(
    ("engines", "formats", "endpoints"),
    [(["yahoo"], {}, {}), (["google"], {"google": "as"}, {}), (["google"], {}, {"google": "no-scheme"})],
)
def test_bad_engine_config_is_refused(
    engines: list[str], formats: dict[str, str], endpoints: dict[str, str]
) -> None:
    with pytest.raises(CrawlConfigError):
        resolve(engines, formats, endpoints)


def test_cli_pairs() -> None:
    assert parse_pairs(["google:firefox,bing:osjson"], "format", ":") == {
        "google": "firefox",
        "bing": "osjson",
    }
    assert parse_pairs(["google:firefox=http://h/x?a=b"], "endpoint", "=") == {
        "google:firefox": "http://h/x?a=b"
    }
    with pytest.raises(CrawlConfigError):
        parse_pairs(["google"], "format", ":")


def test_archive_is_content_addressed_and_checked(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    meta = {"engine": "google", "format": "psy-ab", "url": "u", "status": 200, "fetched_at": "t"}
    ref = archive.put(b'["q",[]]', meta)
    assert ref.startswith("sha256:") and archive.put(b'["q",[]]', meta) == ref
    path = tmp_path / ref[7:9] / f"{ref[7:]}.json.gz"
    assert path.exists()
    saved = archive.get(ref)
    assert saved.body == b'["q",[]]' and saved.meta == meta
    binary = archive.put(b"\xff\xfe", meta)  # not UTF-8: stored as base64
    assert archive.get(binary).body == b"\xff\xfe"
    path.write_bytes(gzip.compress(b'{"meta":{},"body":"tampered"}'))
    with pytest.raises(ArchiveError, match="does not match"):
        archive.get(ref)
    with pytest.raises(ArchiveError):
        archive.get("sha256:" + "0" * 64)


def params(**kw: object) -> CrawlParams:
    base: dict[str, object] = {"crawl_id": "ac-1", "roots": ("a", "b"), "engines": (("google", "psy-ab"),)}
    return CrawlParams(**{**base, **kw})  # type: ignore[arg-type]


def test_fingerprint_ignores_id_time_and_root_order() -> None:
    assert params().fingerprint == params(crawl_id="ac-2", roots=("b", "a"), created_at="x").fingerprint
    assert params().fingerprint != params(max_depth=3).fingerprint


def test_journal_survives_a_torn_line_and_finds_unfinished_crawls(tmp_path: Path) -> None:
    store = CrawlStore(tmp_path)
    with store.create(params()) as journal:
        journal.append({"kind": "started", "engine": "google", "root": "a"})
        journal.append({"kind": "node", "engine": "google", "root": "a", "query": "a"})
    with pytest.raises(CrawlStateError):
        store.create(params())
    with (tmp_path / "ac-1" / "journal.jsonl").open("ab") as fh:
        fh.write(b'{"kind": "node", "eng')  # crash mid-write
    with store.open("ac-1") as journal:
        assert [r["kind"] for r in journal.records] == ["started", "node"]
        assert journal.has("started", "google", "a") and not journal.has("started", "google", "b")
        journal.append({"kind": "completed", "engine": "google", "root": "a"})
    with store.open("ac-1") as journal:
        assert len(journal.records) == 3
        assert store.find_unfinished(params(crawl_id="other").fingerprint) is not None
        journal.finish()
    assert store.find_unfinished(params().fingerprint) is None
    assert store.info("ac-1").finished_at is not None
    with pytest.raises(CrawlStateError):
        store.open("nope")


def test_read_roots() -> None:
    assert read_roots(["# governors", "charlie  baker", "", "kate brown", "charlie baker "]) == (
        "charlie baker",
        "kate brown",
    )


def test_events_validate_and_have_deterministic_ids() -> None:
    at = datetime(2018, 6, 27, 9, tzinfo=UTC)
    node = node_event(
        crawl_id="ac-1",
        engine="google",
        root="charlie baker",
        node=Node("charlie baker email", "charlie baker", 1, 1),
        suggestions=[ParsedSuggestion(1, "charlie baker email", True, "0:22,30")],
        status="ok",
        raw_ref="sha256:" + "a" * 64,
        sent_at=at,
    )
    started = started_event(
        crawl_id="ac-1", engine="google", root="charlie baker", max_depth=8, trimming_rule="all_words"
    )
    done = completed_event(
        crawl_id="ac-1",
        engine="google",
        root="charlie baker",
        max_depth=8,
        trimming_rule="first_last_word",
        n_nodes=1,
        n_edges=1,
        n_failed=0,
    )
    for event in (node, started, done):
        EVENT.validate_python(event)
    assert node["event_id"] == str(node_event_id("ac-1", "google", "charlie baker", "Charlie  Baker Email"))
    assert node["suggestions"] == [
        {"rank": 1, "text": "charlie baker email", "self_loop": True, "type": "0:22,30"}
    ]
    assert len({node["event_id"], started["event_id"], done["event_id"]}) == 3
    assert node_event_id("ac-2", "google", "charlie baker", "x") != node_event_id(
        "ac-1", "google", "charlie baker", "x"
    )


def test_schedule_parsing_and_next_run() -> None:
    times = parse_schedule("18:00, 09:00,9:00")
    assert times == (time(9, 0, tzinfo=UTC), time(18, 0, tzinfo=UTC))
    assert next_run(datetime(2018, 6, 27, 8, 59, tzinfo=UTC), times) == datetime(2018, 6, 27, 9, tzinfo=UTC)
    assert next_run(datetime(2018, 6, 27, 9, 0, tzinfo=UTC), times) == datetime(2018, 6, 27, 18, tzinfo=UTC)
    assert next_run(datetime(2018, 6, 27, 18, 1, tzinfo=UTC), times) == datetime(2018, 6, 28, 9, tzinfo=UTC)
    with pytest.raises(CrawlConfigError):
        parse_schedule("9am")


def test_run_on_schedule_sleeps_until_each_slot() -> None:
    now = [datetime(2018, 6, 27, 8, 0, tzinfo=UTC)]
    ran: list[datetime] = []
    said: list[str] = []

    async def sleep(seconds: float) -> None:
        now[0] = now[0].fromtimestamp(now[0].timestamp() + seconds, UTC)

    async def job(at: datetime) -> None:
        ran.append(at)

    asyncio.run(
        run_on_schedule(
            parse_schedule("09:00,18:00"), job, notify=said.append, now=lambda: now[0], sleep=sleep, runs=3
        )
    )
    assert ran == [
        datetime(2018, 6, 27, 9, tzinfo=UTC),
        datetime(2018, 6, 27, 18, tzinfo=UTC),
        datetime(2018, 6, 28, 9, tzinfo=UTC),
    ]
    assert said[0] == "next crawl round at 2018-06-27 09:00 UTC"


def test_a_crawl_is_owned_by_one_process_at_a_time(tmp_path: Path) -> None:
    store = CrawlStore(tmp_path)
    with store.create(params()) as journal:
        journal.append({"kind": "started", "engine": "google", "root": "a"})
        with pytest.raises(CrawlStateError, match="another process"):
            store.open("ac-1")
        assert [r["kind"] for r in store.info("ac-1").records()] == ["started"]  # listing still works
    with store.open("ac-1") as journal:
        assert len(journal.records) == 1
