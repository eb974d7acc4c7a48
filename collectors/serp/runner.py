"""Wiring for one ``crawl serp`` run: state dir, archive, fetchers and sink around ``run_study``.

Kept out of the CLI so tests (and other front ends) run a study exactly as the
command does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from collectors.common.archive import Archive
from collectors.common.sinks import EventSink
from collectors.serp.crawler import RoundReport, StudySummary, run_study, summarize
from collectors.serp.engines import SERP_ENGINES
from collectors.serp.fetchers import CHROMIUM, open_fetchers
from collectors.serp.state import StudyStore
from collectors.serp.study import Study


async def crawl_study(
    study: Study,
    *,
    state_dir: Path,
    archive_dir: Path,
    sink: EventSink,
    endpoint: str | None = None,
    chromium: str = CHROMIUM,
    notify: Callable[[str], None] | None = None,
    on_round: Callable[[RoundReport], None] | None = None,
    on_open: Callable[[StudySummary], None] | None = None,
) -> StudySummary:
    """Run or resume ``study``; ``endpoint`` replaces the engine's origin (a local fake)."""
    engine = SERP_ENGINES[study.study.engine].with_endpoint(endpoint)
    with StudyStore(state_dir).open(study, datetime.now(UTC)) as journal:
        if on_open is not None:
            on_open(summarize(journal, study.total_rounds))
        async with open_fetchers(
            study,
            engine.search_url,
            cookie_dir=journal.directory / "cookies",
            browser_dir=journal.directory / "browser",
            chromium=chromium,
        ) as fetchers:
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
