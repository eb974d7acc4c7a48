"""Fast lock-step studies against the fake engine: the study file, its script and a crawl.

Shared by the SERP crawler tests, the personalization crawl test and ``bench.serp_skew``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from collectors.common.sinks import JsonlSink
from collectors.serp.crawler import StudySummary
from collectors.serp.runner import crawl_study
from collectors.serp.study import Study
from tests.fakes.serp_engine import FakeEngineScript, FakeSerpEngine

PROFILES = (("control", "control", ""), ("twin", "control_twin", ""), ("login", "treatment", "logged_in"))
PROFILES_4 = (*PROFILES, ("boston", "treatment", "location=Boston"))
PROFILES_5 = (
    ("control", "control", ""),
    ("twin", "control_twin", ""),
    ("login-a", "treatment", "logged_in"),
    ("login-b", "treatment", "logged_in"),
    ("boston", "treatment", "location=Boston"),
)
"""Two personalized profiles beside control, twin and a location: the personalization test's."""
UA = "Mozilla/5.0 (X11; Linux x86_64) auditstream-test"
QUERIES: tuple[tuple[str, ...], ...] = (("coffee", "food"), ("pizza boston", "places"))


def study_file(
    tmp_path: Path,
    *,
    study_id: str = "lockstep",
    rounds: int = 6,
    lead_s: float = 1.0,
    spacing: float | str = 0.5,
    max_start_delay: str = "400ms",
    profiles: Sequence[tuple[str, str, str]] = PROFILES_4,
    extra: str = "",
    queries: Sequence[tuple[str, ...]] = QUERIES,
    profile_extra: Mapping[str, str] | None = None,
) -> tuple[Path, float]:
    """A fast study starting ``lead_s`` from now; returns its path and start (Unix time).

    ``queries`` are (text, category) pairs, or (text, category, preceded_by) for a
    carry-over study; ``profile_extra`` adds TOML lines to a profile (by id) after its own,
    e.g. its ``[[profiles.history]]`` steps or ``carry_over_wait``.
    """
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1 + lead_s)
    query_text = "".join(
        f'\n[[queries]]\ntext = "{q[0]}"\ncategory = "{q[1]}"\n'
        + (f'preceded_by = "{q[2]}"\n' if len(q) > 2 else "")
        for q in queries
    )
    people = "".join(
        f'\n[[profiles]]\nid = "{i}"\nrole = "{r}"\n'
        + (f'treatment = "{t}"\n' if t else "")
        + f'user_agent = "{UA}"\nlanguage = "en-US"\ncookies = {{ profile = "{i}" }}\n'
        + (profile_extra or {}).get(i, "")
        for i, r, t in profiles
    )
    text = (
        f'[study]\nid = "{study_id}"\nengine = "google"\nspacing = {spacing}\nrounds = {rounds}\n'
        f'start = {start.isoformat().replace("+00:00", "Z")}\nretry_backoff = "50ms"\n'
        f'max_start_delay = "{max_start_delay}"\n{extra}\n{query_text}{people}'
    )
    path = tmp_path / f"{study_id}.toml"
    path.write_text(text)
    return path, start.timestamp()


def script_for(study: Study, start: float, **kw: Any) -> FakeEngineScript:
    treatments = {p.id: p.treatment for p in study.profiles}
    return FakeEngineScript(treatments=treatments, grid=(start, study.study.spacing), **kw)


def crawl(study: Study, engine: FakeSerpEngine, tmp_path: Path, out: str = "events.jsonl") -> StudySummary:
    """Run ``study`` against ``engine`` as ``crawl serp --out`` does; state under ``tmp_path/state``."""

    async def go() -> StudySummary:
        sink = JsonlSink(tmp_path / out)
        try:
            return await crawl_study(
                study,
                state_dir=tmp_path / "state",
                archive_dir=tmp_path / "archive",
                sink=sink,
                endpoint=engine.base_url,
            )
        finally:
            await sink.aclose()

    return asyncio.run(go())
