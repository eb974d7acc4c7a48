"""Lock-step rounds (Hannak et al.): at each slot every profile sends the same query at once.

Round ``k`` has a slot ``T_k`` on the study's grid (``schedule``) and a deadline
``T_k + round_timeout`` (shorter than the spacing). In a round:

1. every profile's fetch is launched together; the start of the request whose answer
   is recorded is the profile's ``sent_at``;
2. a failed attempt (no answer, 5xx) is retried with backoff while the deadline
   allows; the deadline cuts every attempt, so a slow profile fails alone and late;
3. answers are archived and parsed, and the whole round is journaled as one ``round``
   record with its skew (``max(sent_at) - min(sent_at)``, the figure the stream side
   recomputes from the events), ``load_skew_ms`` (``max - min`` of ``answered_at``, when
   each page had finished loading: the body read, or for a browser the load event and
   any consent wall dealt with; over the profiles that got a page), ``launch_skew_ms``
   (first attempts, monotonic clock) and ``late_ms`` (first launch after the slot),
   ``over_tolerance`` (either skew above the study's ``skew_tolerance``), and each
   profile's ``planned_at``: when the crawler meant to send the recorded attempt (the
   slot for a first attempt, the previous answer plus the backoff for a retry), its
   ``fetcher`` and ``consent`` (what happened with a consent wall, ``collectors.serp.consent``);
   a CAPTCHA or block page, found in the page as rendered, is never retried in its
   round (asking again within seconds only deepens a block), whatever its HTTP status;
4. the round's events go to the sink in one batch, then ``emitted`` is journaled.

History (``Study.steps``): a profile's history steps before a round (its scripted
searches, clicks and visits before each pass, or a carry-over profile's first query of
the pair) are run by the round's task before the slot: the round is set up (journaled as
started) before its first step is due, each step starts at its planned time, its fetches
are cut before the next step is due, and any step still running at the slot is cancelled,
so the measured query is sent at the slot as in any round. Each step is recorded in the
profile's part of the round record (``history``: action, target, planned and sent times,
status, the archived page), and the pages are archived with ``history`` in their metadata.
A pass whose history did not run (its first round missed) is not measured: its rounds
are journaled ``missed``.

Punctuality is a property of the schedule: every first attempt of a round is planned
for the round's slot exactly (``planned_skew_ms`` is 0 unless a retry was recorded),
which tests check exactly. How late a loaded machine actually sends (``skew_ms``,
``late_ms``) is a measurement, reported per round and benchmarked in ``bench.serp_skew``.

The scheduler starts round ``k`` at ``T_k`` without waiting for round ``k-1``: a
slow round or a slow sink never shifts the grid. Undelivered rounds are retried after
each round and at the end (the crawl goes on while ingest is down).

Resume: rounds journaled as ``round`` are done; a ``round`` without ``emitted`` is
re-sent (same event ids); a round started but not recorded, or whose slot passed
more than ``max_start_delay`` ago, is journaled ``missed`` and never run: the crawler
resumes at the next slot still ahead, and a partial round is never emitted.
"""

from __future__ import annotations

import asyncio
import logging
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from collectors.common.archive import Archive
from collectors.common.exceptions import CrawlError, CrawlStateError, unwrap_group
from collectors.common.http import RawResponse
from collectors.common.metrics import BACKOFFS, REQUESTS, SERP_PAGES
from collectors.common.politeness import Backoff
from collectors.common.sinks import EventSink
from collectors.serp.engines import SerpEngine
from collectors.serp.events import round_events
from collectors.serp.page import Fetched, Fetcher
from collectors.serp.parser import ParsedSerp, click_target, parse_serp
from collectors.serp.schedule import Grid
from collectors.serp.state import StudyJournal
from collectors.serp.study import PlannedStep, Profile, Study
from schemas.events import KNOWN_LAYOUT

log = logging.getLogger(__name__)

FAILED = frozenset({"captcha", "blocked", "error"})


PREPARE_S = 0.25
"""A round is set up (journaled as started) this long before its slot, so the launch is on time."""
HISTORY_GUARD_S = 0.1
"""A history step's fetches end this long before the next step (or the slot) is due."""


async def _sleep_until(ts: float) -> None:
    while (left := ts - time.time()) > 0:
        await asyncio.sleep(min(left, 30.0))  # re-read the wall clock: it can jump


def retryable(http_status: int) -> bool:
    """No answer or a 5xx. Not a 429: asking again within seconds only deepens a block."""
    return http_status == 0 or http_status >= 500


def _iso_ms(ts: float) -> str:
    """A Unix time as ISO 8601 UTC with milliseconds (the precision ``sent_at`` is stored with)."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class RoundReport:
    round: int
    round_id: str
    query: str
    slot: str
    skew_ms: float
    launch_skew_ms: float
    late_ms: float
    statuses: dict[str, str]
    unknown_layouts: int = 0
    """Profiles whose page had a layout the rules do not know (coverage below KNOWN_LAYOUT)."""
    load_skew_ms: float | None = None
    """``max - min`` of when the profiles' pages finished loading (None: fewer than two pages,
    or a journal written before the figure existed)."""
    over_tolerance: bool = False
    consent: dict[str, str] = field(default_factory=dict)
    """Profile -> what happened with a consent wall, for the profiles that met one."""
    history: dict[str, dict[str, int]] = field(default_factory=dict)
    """Profile -> its history steps before this round's query, by status (ok, error, ...)."""

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> RoundReport:
        return cls(
            record["round"],
            record["round_id"],
            record["query"],
            record["slot"],
            record["skew_ms"],
            record["launch_skew_ms"],
            record["late_ms"],
            {p["profile_id"]: p["status"] for p in record["profiles"]},
            sum(
                1
                for p in record["profiles"]
                if p.get("coverage") is not None and p["coverage"] < KNOWN_LAYOUT
            ),
            record.get("load_skew_ms"),
            bool(record.get("over_tolerance")),
            {p["profile_id"]: p["consent"] for p in record["profiles"] if p.get("consent")},
            {
                p["profile_id"]: dict(Counter(h["status"] for h in p["history"]))
                for p in record["profiles"]
                if p.get("history")
            },
        )

    @property
    def history_failed(self) -> dict[str, int]:
        """Profile -> history steps of this round that did not end with a page (or were skipped)."""
        out = {p: sum(n for status, n in c.items() if status != "ok") for p, c in self.history.items()}
        return {p: n for p, n in out.items() if n}


@dataclass
class StudySummary:
    study_id: str
    total_rounds: int
    rounds: list[RoundReport]
    missed: dict[int, str]
    undelivered: list[int]
    finished: bool

    @property
    def unknown_layouts(self) -> int:
        """Pages whose layout the rules did not know: re-parse them once the rules are fixed."""
        return sum(r.unknown_layouts for r in self.rounds)

    @property
    def max_skew_ms(self) -> float | None:
        return max((r.skew_ms for r in self.rounds), default=None)

    @property
    def median_skew_ms(self) -> float | None:
        return statistics.median(r.skew_ms for r in self.rounds) if self.rounds else None

    @property
    def load_skews_ms(self) -> list[float]:
        return [r.load_skew_ms for r in self.rounds if r.load_skew_ms is not None]

    @property
    def over_tolerance(self) -> list[str]:
        """Rounds whose profiles sent or loaded further apart than the study's skew tolerance."""
        return [r.round_id for r in self.rounds if r.over_tolerance]

    def consent(self) -> dict[str, Counter[str]]:
        """Profile -> consent walls met, by what happened (accepted, rejected, left, failed)."""
        out: dict[str, Counter[str]] = {}
        for r in self.rounds:
            for profile, outcome in r.consent.items():
                out.setdefault(profile, Counter())[outcome] += 1
        return out

    def statuses(self) -> dict[str, Counter[str]]:
        out: dict[str, Counter[str]] = {}
        for r in self.rounds:
            for profile, status in r.statuses.items():
                out.setdefault(profile, Counter())[status] += 1
        return out

    def history(self) -> dict[str, Counter[str]]:
        """Profile -> its history steps over the study, by status."""
        out: dict[str, Counter[str]] = {}
        for r in self.rounds:
            for profile, counts in r.history.items():
                out.setdefault(profile, Counter()).update(counts)
        return out


def summarize(journal: StudyJournal, total_rounds: int) -> StudySummary:
    """The study so far, from its journal (every run, not only this one)."""
    emitted = journal.rounds("emitted")
    rounds = sorted((RoundReport.of(r) for r in journal.of("round")), key=lambda r: r.round)
    missed = {int(r["round"]): str(r["reason"]) for r in journal.of("missed")}
    return StudySummary(
        journal.study_id,
        total_rounds,
        rounds,
        missed,
        sorted({r.round for r in rounds} - emitted),
        journal.finished_at is not None,
    )


@dataclass
class _Attempt:
    raw: RawResponse
    started: float
    """Unix time the recorded attempt started."""
    planned: float
    """Unix time the recorded attempt was planned for (the slot, or answer + backoff)."""
    first_wall: float
    first_mono: float
    """Unix and monotonic time the first attempt started."""
    attempts: int


@dataclass
class _Step:
    """One history step as done: what, when planned and sent, and the page it got (None: not
    fetched, ``detail`` says why)."""

    action: str
    """search, click or visit"""
    target: str
    """The query, the clicked result's URL (or the click asked for), or the visited URL."""
    planned: float
    started: float
    raw: RawResponse | None = None
    detail: str = ""


def _action(step: PlannedStep) -> str:
    return "search" if step.kind == "search" else "visit"


@dataclass
class _Run:
    journal: StudyJournal
    study: Study
    grid: Grid
    engine: SerpEngine
    fetchers: Mapping[str, Fetcher]
    archive: Archive
    sink: EventSink
    notify: Callable[[str], None]
    on_round: Callable[[RoundReport], None] | None
    backoff: Backoff = field(init=False)
    records: dict[int, dict[str, Any]] = field(default_factory=dict)
    emitted: set[int] = field(default_factory=set)
    missed: set[int] = field(default_factory=set)
    ready_passes: set[int] = field(default_factory=set)
    """Passes through the query list whose history ran (their first round ran its history)."""
    _delivering: asyncio.Lock = field(default_factory=asyncio.Lock)
    _busy: dict[str, asyncio.Lock] = field(default_factory=dict)
    """One lock per profile: its fetcher (a browser page) does one thing at a time."""

    def __post_init__(self) -> None:
        self.backoff = Backoff(
            self.study.study.retry_backoff, self.study.round_timeout, rng=random.Random(self.study.id)
        )
        self.records = {int(r["round"]): r for r in self.journal.of("round")}
        self.emitted = self.journal.rounds("emitted")
        self.missed = self.journal.rounds("missed")
        n = len(self.study.queries)
        self.ready_passes = {k // n for k in self.records if k % n == 0}
        self._busy = {p.id: asyncio.Lock() for p in self.study.profiles}

    async def _append(self, record: dict[str, Any]) -> None:
        await asyncio.to_thread(self.journal.append, record)

    async def _miss(self, k: int, reason: str) -> None:
        self.missed.add(k)
        await self._append(
            {"kind": "missed", "round": k, "round_id": self.grid.round_id(k), "reason": reason}
        )
        log.warning("round %s missed: %s", self.grid.round_id(k), reason)

    async def run(self) -> None:
        started = self.journal.rounds("round_started")
        for k in sorted(started - set(self.records) - self.missed):
            await self._miss(k, "interrupted mid-round (the crawler stopped); never emitted")
        await self.deliver()
        delay_ok, n = self.study.max_start_delay, len(self.study.queries)
        async with asyncio.TaskGroup() as tg:
            for k in range(self.grid.total):
                if k in self.records or k in self.missed:
                    continue
                slot = self.grid.slot(k).timestamp()
                begin = slot - self.study.lead(k)  # the first history step, else the slot
                what = "its slot" if begin == slot else "the start of its history"
                if (late := time.time() - begin) > delay_ok:
                    await self._miss(k, f"{what} passed {late:.3f}s before the crawler reached it")
                    continue
                await _sleep_until(begin - min(PREPARE_S, self.study.study.spacing / 4))
                if (late := time.time() - begin) > delay_ok:
                    await self._miss(k, f"started {late:.3f}s late (more than max_start_delay)")
                    continue
                if self.study.pass_history and k % n and k // n not in self.ready_passes:
                    await self._miss(
                        k, "the history before its pass did not run (the pass's first round was missed)"
                    )
                    continue
                tg.create_task(self._round(k, slot))
        await self.deliver()

    async def _round(self, k: int, slot: float) -> None:
        query = self.study.queries[self.grid.query_index(k)]
        url = self.engine.url(query.text, self.study.study.url_params)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (slot + self.study.round_timeout - time.time())
        await self._append({"kind": "round_started", "round": k})  # fsynced before the slot, not in it
        histories = await self._histories(k, slot)
        if k % len(self.study.queries) == 0:
            self.ready_passes.add(k // len(self.study.queries))
        await _sleep_until(slot)
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(self._fetch(p, url, deadline, slot)) for p in self.study.profiles]
        attempts = [t.result() for t in tasks]
        profiles = await asyncio.gather(
            *(
                self._record(p, a, query.text, k, histories.get(p.id, []))
                for p, a in zip(self.study.profiles, attempts, strict=True)
            )
        )
        starts = [datetime.fromisoformat(p["sent_at"]).timestamp() for p in profiles]
        loads = [a.raw.fetched_at.timestamp() for a in attempts if a.raw.http_status]
        firsts = [a.first_mono for a in attempts]
        planned = [a.planned for a in attempts]
        skew_ms = round((max(starts) - min(starts)) * 1000, 3)
        load_skew_ms = round((max(loads) - min(loads)) * 1000, 3) if len(loads) > 1 else None
        record = {
            "kind": "round",
            "round": k,
            "round_id": self.grid.round_id(k),
            "study_id": self.study.id,
            "engine": self.engine.name,
            "query": query.text,
            "category": query.category,
            "slot": _iso_ms(slot),
            "skew_ms": skew_ms,
            "load_skew_ms": load_skew_ms,
            "over_tolerance": max(skew_ms, load_skew_ms or 0.0) > self.study.skew_tolerance * 1000,
            "planned_skew_ms": round((max(planned) - min(planned)) * 1000, 3),
            "launch_skew_ms": round((max(firsts) - min(firsts)) * 1000, 3),
            "late_ms": round((min(a.first_wall for a in attempts) - slot) * 1000, 3),
            "profiles": profiles,
        }
        await self._append(record)
        self.records[k] = record
        report = RoundReport.of(record)
        if self.on_round is not None:
            self.on_round(report)
        self._tell(report)
        await self.deliver()

    async def _histories(self, k: int, slot: float) -> dict[str, list[_Step]]:
        """Every profile's history steps before round ``k`` (run side by side), done by the slot:
        each step's fetches are cut before the next step is due, and a step still running at
        the slot (a fetcher that overran its limit) is cancelled, so the slot never moves."""
        plans = {p.id: (p, steps) for p in self.study.profiles if (steps := self.study.steps(p, k))}
        done: dict[str, list[_Step]] = {pid: [] for pid in plans}
        if not plans:
            return done
        begun = dict.fromkeys(plans, 0)
        tasks = [
            asyncio.create_task(self._history(p, steps, slot, done[p.id], begun), name=f"history {p.id}")
            for p, steps in plans.values()
        ]
        try:
            await asyncio.wait(tasks, timeout=max(slot - time.time(), 0.0))
        finally:
            for task in tasks:
                task.cancel()
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome
        # A round that began late (a slow disk, a starved machine) reaches the slot before
        # some steps were due: they are on record as not run, never silently missing, so the
        # round is not read as a profile with its history when it had none.
        now = time.time()
        for pid, (_, steps) in plans.items():
            for step in steps[begun[pid] :]:
                done[pid].append(
                    _Step(_action(step), step.target, slot + step.at, now, None, "not begun by the slot")
                )
        return done

    async def _history(
        self,
        profile: Profile,
        steps: tuple[PlannedStep, ...],
        slot: float,
        done: list[_Step],
        begun: dict[str, int],
    ) -> None:
        """Run ``profile``'s steps at their planned times, appending each to ``done`` as it starts
        (so a step cut at the slot is on record as cut) and counting it in ``begun``."""
        fetcher, limit_s = self.fetchers[profile.id], self.study.study.fetch_timeout
        for step in steps:
            planned, until = slot + step.at, slot + step.until - HISTORY_GUARD_S
            await _sleep_until(planned)
            begun[profile.id] += 1
            action = _action(step)
            started = time.time()
            if (left := until - started) <= 0:
                done.append(
                    _Step(action, step.target, planned, started, None, "no time left before the next step")
                )
                continue
            done.append(_Step(action, step.target, planned, started, None, "still running at the slot: cut"))
            async with self._busy[profile.id]:
                if step.kind == "search":
                    url = self.engine.url(step.target, self.study.study.url_params)
                    raw = await fetcher.fetch(url, time_limit=min(limit_s, left))
                else:
                    raw = await fetcher.visit(step.target, time_limit=min(limit_s, left))
            done[-1] = _Step(action, step.target, planned, started, raw)
            if step.click is not None:
                now = time.time()
                done.append(_Step("click", str(step.click), now, now, None, "still running at the slot: cut"))
                done[-1] = await self._click(profile, raw, step.click, until)

    async def _click(self, profile: Profile, page: RawResponse, click: int | str, until: float) -> _Step:
        """Click a result of the search page just fetched (``click``: a rank or a URL part)."""
        now = time.time()
        if not page.http_status or not page.body:
            return _Step("click", str(click), now, now, None, "the search got no page")
        target = await asyncio.to_thread(click_target, self.engine.name, page.body, click)
        if target is None:
            return _Step("click", str(click), now, now, None, f"no organic result {click!r} on the page")
        href, result_url = target
        started = time.time()
        if (left := until - started) <= 0:
            return _Step("click", result_url, now, started, None, "no time left before the next step")
        async with self._busy[profile.id]:
            raw = await self.fetchers[profile.id].click(
                href, page_url=page.url, time_limit=min(self.study.study.fetch_timeout, left)
            )
        return _Step("click", result_url, now, started, raw)

    async def _history_record(self, profile: Profile, k: int, steps: list[_Step]) -> list[dict[str, Any]]:
        """The journal's account of a profile's history steps; each page got is archived (a
        search page is parsed for its status: a CAPTCHA there is a block like any other)."""
        out = []
        for step in steps:
            raw = step.raw
            entry: dict[str, Any] = {
                "action": step.action,
                "target": step.target,
                "planned_at": _iso_ms(step.planned),
                "sent_at": _iso_ms(step.started),
                "http_status": raw.http_status if raw is not None else 0,
                "url": raw.url if raw is not None else "",
                "consent": raw.consent if isinstance(raw, Fetched) else "",
                "raw_ref": "",
                "detail": step.detail or (raw.error if raw is not None else ""),
            }
            if raw is None:
                entry["status"] = "skipped"
            elif not raw.http_status:
                entry["status"] = "error"
            else:
                meta = {
                    "engine": self.engine.name,
                    "url": raw.url,
                    "query": step.target if step.action == "search" else "",
                    "profile": profile.id,
                    "round_id": self.grid.round_id(k),
                    "history": step.action,
                    "status": raw.http_status,
                    "fetched_at": raw.fetched_at.isoformat(),
                    "content_type": raw.content_type,
                    "charset": raw.charset,
                    "fetcher": self.study.study.fetcher,
                    "consent": entry["consent"],
                }
                entry["raw_ref"] = await asyncio.to_thread(self.archive.put, raw.body, meta)
                entry["answered_at"] = raw.fetched_at.isoformat(timespec="milliseconds")
                if step.action == "search":
                    parsed = await asyncio.to_thread(
                        parse_serp, self.engine.name, raw.body, http_status=raw.http_status
                    )
                    entry["status"], entry["detail"] = parsed.status, parsed.detail
                    REQUESTS.labels(
                        self.engine.name, {"captcha": "blocked"}.get(parsed.status, parsed.status)
                    ).inc()
                else:
                    entry["status"] = "ok" if raw.http_status < 400 else "error"
            out.append(entry)
        return out

    def _tell(self, report: RoundReport) -> None:
        """What the operator should hear about a round: failures, consent walls, a wide skew."""
        failed = {p: s for p, s in report.statuses.items() if s in FAILED}
        if failed:
            self.notify(f"round {report.round_id}: {failed}")
        if report.history_failed:
            self.notify(
                f"round {report.round_id}: history steps that did not go as planned: {report.history_failed}"
            )
        if report.consent:
            walls = ", ".join(f"{p} {outcome}" for p, outcome in sorted(report.consent.items()))
            self.notify(f"round {report.round_id}: consent wall ({self.study.study.consent}): {walls}")
        if report.over_tolerance:
            self.notify(
                f"round {report.round_id}: profiles sent {report.skew_ms:.0f} ms and finished loading "
                f"{report.load_skew_ms or 0:.0f} ms apart, over the study's skew tolerance "
                f"({self.study.skew_tolerance * 1000:.0f} ms)"
            )

    async def _fetch(self, profile: Profile, url: str, deadline: float, slot: float) -> _Attempt:
        """Fetch with retries; the first attempt is planned for ``slot``, a retry for the
        previous answer plus its backoff."""
        loop = asyncio.get_running_loop()
        fetcher = self.fetchers[profile.id]
        first_wall, first_mono, attempts = time.time(), loop.time(), 0
        next_planned = slot
        while True:
            started, planned = time.time(), next_planned
            remaining = deadline - loop.time()
            if remaining <= 0:
                raw = RawResponse(url, 0, b"", datetime.now(UTC), error="round deadline passed")
            else:
                async with self._busy[profile.id]:
                    raw = await fetcher.fetch(url, time_limit=min(self.study.study.fetch_timeout, remaining))
            attempts += 1
            if not retryable(raw.http_status) or attempts > self.study.study.retries:
                break
            block: bool = await asyncio.to_thread(self._block_page, raw)
            if block:
                break
            pause = self.backoff.delay(attempts - 1, raw.retry_after)
            if loop.time() + pause >= deadline:
                break
            REQUESTS.labels(self.engine.name, "retry").inc()
            BACKOFFS.labels(self.engine.name).inc()
            log.info("%s: %s; retrying in %.2fs", profile.id, raw.http_status or raw.error, pause)
            next_planned = time.time() + pause
            await asyncio.sleep(pause)
        return _Attempt(raw, started, planned, first_wall, first_mono, attempts)

    def _block_page(self, raw: RawResponse) -> bool:
        """A CAPTCHA page (e.g. behind a 503): not to be asked again in this round."""
        if not raw.body:
            return False
        return parse_serp(self.engine.name, raw.body, http_status=raw.http_status).status == "captcha"

    async def _record(
        self, profile: Profile, attempt: _Attempt, query: str, k: int, history: list[_Step]
    ) -> dict[str, Any]:
        """Archive and parse one profile's answer (and its history's pages): its part of the
        round record."""
        raw = attempt.raw
        fetcher = self.study.study.fetcher
        consent = raw.consent if isinstance(raw, Fetched) else ""
        raw_ref = ""
        if raw.http_status:
            meta = {
                "engine": self.engine.name,
                "url": raw.url,
                "query": query,
                "profile": profile.id,
                "round_id": self.grid.round_id(k),
                "status": raw.http_status,
                "fetched_at": raw.fetched_at.isoformat(),
                "content_type": raw.content_type,
                "charset": raw.charset,
                "fetcher": fetcher,  # browser: the HTML as rendered, after the page's scripts ran
                "consent": consent,
            }
            raw_ref = await asyncio.to_thread(self.archive.put, raw.body, meta)
            parsed = await asyncio.to_thread(
                parse_serp, self.engine.name, raw.body, http_status=raw.http_status
            )
        else:
            parsed = ParsedSerp("error", detail=raw.error or "no answer")
        REQUESTS.labels(self.engine.name, {"captcha": "blocked"}.get(parsed.status, parsed.status)).inc()
        if parsed.coverage is not None:
            layout = "known" if parsed.coverage >= KNOWN_LAYOUT else "unknown"
            SERP_PAGES.labels(self.engine.name, layout).inc()
            if layout == "unknown":
                log.warning(
                    "%s %s %r: a layout the rules do not know (coverage %.2f); raw page %s",
                    self.grid.round_id(k),
                    profile.id,
                    query,
                    parsed.coverage,
                    raw_ref,
                )
        if parsed.status in FAILED:
            log.warning(
                "%s %s %r: %s (%s)", self.grid.round_id(k), profile.id, query, parsed.status, parsed.detail
            )
        record = {
            "profile_id": profile.id,
            "role": profile.role,
            "treatment": profile.treatment,
            "status": parsed.status,
            "detail": parsed.detail,
            "http_status": raw.http_status,
            "attempts": attempt.attempts,
            "sent_at": _iso_ms(attempt.started),
            "planned_at": _iso_ms(attempt.planned),
            "answered_at": raw.fetched_at.isoformat(timespec="milliseconds"),
            "fetcher": fetcher,
            "consent": consent,
            "raw_ref": raw_ref,
            "result_estimate": parsed.result_estimate,
            "language": parsed.language,
            "components": [c.to_json() for c in parsed.components],
            "coverage": parsed.coverage,
            "parse_errors": len(parsed.errors),
        }
        if history:
            record["history"] = await self._history_record(profile, k, history)
        return record

    async def deliver(self) -> bool:
        """Emit every recorded round not yet emitted, oldest first; False if the sink failed."""
        async with self._delivering:
            for k in sorted(set(self.records) - self.emitted):
                events = round_events(self.records[k])
                try:
                    await self.sink.emit(events)
                except (CrawlError, OSError) as exc:
                    self.notify(f"could not deliver round {self.grid.round_id(k)} ({exc}); will retry")
                    return False
                await self._append({"kind": "emitted", "round": k, "events": len(events)})
                self.emitted.add(k)
        return True


async def run_study(
    journal: StudyJournal,
    study: Study,
    engine: SerpEngine,
    *,
    fetchers: Mapping[str, Fetcher],
    archive: Archive,
    sink: EventSink,
    notify: Callable[[str], None] | None = None,
    on_round: Callable[[RoundReport], None] | None = None,
) -> StudySummary:
    """Run (or resume) the study's remaining rounds on its grid; mark it finished when every
    round is recorded or missed and every recorded round delivered."""
    if journal.study_id != study.id:
        raise CrawlStateError(f"journal of {journal.study_id} given for study {study.id}")
    grid = Grid.of(study, journal.start)
    for layout in ("known", "unknown"):  # both series exist from the start, so rate() sees the first
        SERP_PAGES.labels(engine.name, layout)
    run = _Run(journal, study, grid, engine, fetchers, archive, sink, notify or (lambda m: None), on_round)
    if journal.finished_at is None:
        try:
            await run.run()
        except BaseExceptionGroup as group:
            raise unwrap_group(group) from None
        undelivered = set(run.records) - run.emitted
        if undelivered:
            raise CrawlError(
                f"{len(undelivered)} rounds of study {study.id} are recorded but not delivered; "
                "run the same command again to re-send them"
            )
        await asyncio.to_thread(journal.finish)
    return summarize(journal, study.total_rounds)
