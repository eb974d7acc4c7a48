"""Wiring for one ``crawl serp`` run: state dir, archive, fetchers and sink around ``run_study``.

Kept out of the CLI so tests (and other front ends) run a study exactly as the
command does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from collectors.common.archive import Archive
from collectors.common.sinks import EventSink
from collectors.serp.crawler import RoundReport, StudySummary, run_study, summarize
from collectors.serp.engines import SERP_ENGINES
from collectors.serp.fetchers import BrowserOptions, open_fetchers
from collectors.serp.state import StudyStore
from collectors.serp.study import Study


async def crawl_study(
    study: Study,
    *,
    state_dir: Path,
    archive_dir: Path,
    sink: EventSink,
    endpoint: str | None = None,
    browser: BrowserOptions | None = None,
    notify: Callable[[str], None] | None = None,
    on_round: Callable[[RoundReport], None] | None = None,
    on_open: Callable[[StudySummary], None] | None = None,
) -> StudySummary:
    """Run or resume ``study``; ``endpoint`` replaces the engine's origin (a local fake),
    ``browser`` says how to run Chromium for a browser study.

    A new study without a ``start`` begins its grid once every profile's fetcher is up
    (browsers take seconds to launch), so round 0 is not missed waiting for them, and far
    enough ahead for round 0's history steps (``Study.lead``).
    """
    engine = SERP_ENGINES[study.study.engine].with_endpoint(endpoint)
    with StudyStore(state_dir).open(study, datetime.now(UTC)) as journal:
        if on_open is not None:
            on_open(summarize(journal, study.total_rounds))
        if journal.finished_at is not None:  # nothing to fetch: no browsers to launch
            return summarize(journal, study.total_rounds)
        async with open_fetchers(
            study,
            engine.search_url,
            cookie_dir=journal.directory / "cookies",
            browser_dir=journal.directory / "browser",
            browser=browser,
        ) as fetchers:
            if study.study.start is None and not journal.records:  # round 0's history runs first
                first = datetime.now(UTC) + timedelta(seconds=study.lead(0))
                await asyncio.to_thread(journal.start_grid, first)
            return await run_study(
                journal,
                study,
                engine,
                fetchers=fetchers,
                archive=Archive(archive_dir),
                sink=sink,
                notify=notify,
                on_round=on_round,
            )
