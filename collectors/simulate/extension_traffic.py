"""Realistic extension traffic, generated from a seed (pure; no I/O here)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from collectors.simulate.clickmodel import click_distribution, display_rank
from schemas.assignment import assign_arm

DEFAULT_ARMS: tuple[tuple[str, float], ...] = (
    ("control", 0.40),
    ("swap_1_2", 0.15),
    ("swap_1_3", 0.15),
    ("swap_2_3", 0.10),
    ("hide_box", 0.10),
    ("hide_ads_box", 0.10),
)


@dataclass
class TrafficConfig:
    experiment_id: str = "demo"
    salt: str = "demo-salt"
    arms: Sequence[tuple[str, float]] = DEFAULT_ARMS
    engines: Sequence[tuple[str, float]] = (("google", 0.95), ("bing", 0.05))
    engine_arms: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Engines that run only some arms (as an experiment's ``engine_arms``)."""
    installs: int = 500
    p_new_install: float = 0.1  # installed within the burn-in window
    p_click: float = 0.6  # a page view leads to a click
    p_ads: float = 0.3  # share of pages with ads, over all pages
    p_box: float = 0.032
    p_ads_given_box: float = 0.93  # shopping boxes come with commercial queries, which carry ads
    p_ssr: float = 0.2
    p_unidentified: float = 0.02
    p_first_page: float = 0.9  # searches on a first result page; the rest on pages 2-4
    emit_views: bool = True
    seed: int = 1
    today: date = field(default_factory=lambda: datetime.now(UTC).date())

    def p_ads_given(self, box: bool) -> float:
        """P(ads | box shown or not), keeping the overall share of pages with ads at ``p_ads``."""
        if box:
            return self.p_ads_given_box
        if self.p_box >= 1:
            return self.p_ads
        rest = (self.p_ads - self.p_box * self.p_ads_given_box) / (1 - self.p_box)
        return min(max(rest, 0.0), 1.0)


def _weighted(rng: random.Random, options: Sequence[tuple[str, float]]) -> str:
    return rng.choices([o for o, _ in options], weights=[w for _, w in options])[0]


class ExtensionTraffic:
    """Yields event dicts ready to post.

    Everything but the event ids follows the seed. Event ids are fresh random UUIDs,
    as real clients make them: the pipeline deduplicates by event id across all
    experiments, so seeded ids would make two runs with one seed look like retries.
    """

    def __init__(self, config: TrafficConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.installs = [self._install(i) for i in range(config.installs)]

    def _install(self, i: int) -> dict[str, Any]:
        c, rng = self.config, self.rng
        age = rng.randint(0, 3) if rng.random() < c.p_new_install else rng.randint(4, 120)
        return {
            "install_id": uuid.UUID(int=rng.getrandbits(128)).hex[:20],
            "install_day": (c.today - timedelta(days=age)).isoformat(),
            "extension_version": rng.choice(["1.4.0", "1.4.1", "1.5.0"]),
            "ui_lang": rng.choice(["de", "de-CH", "fr", "en", "it"]),
        }

    def page(self) -> list[dict[str, Any]]:
        """One search: a serp_view (optional) and maybe a click."""
        c, rng = self.config, self.rng
        inst = rng.choice(self.installs)
        query_token = f"q{rng.getrandbits(40)}"  # stands in for the query, which never leaves
        box = ("top" if rng.random() < 0.75 else "side") if rng.random() < c.p_box else "none"
        ads = rng.randint(1, 4) if rng.random() < c.p_ads_given(box != "none") else 0
        ssr = sorted(rng.sample(range(2, 11), rng.randint(1, 2))) if rng.random() < c.p_ssr else []
        engine = _weighted(rng, c.engines)
        only = c.engine_arms.get(engine)
        weights = dict(c.arms)  # in engine_arms' order, as the published config lists them
        arms = c.arms if only is None else [(a, weights[a]) for a in only]
        arm = assign_arm(inst["install_id"], query_token, c.salt, arms)
        context = {
            "schema_version": 1,
            "sent_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "experiment_id": c.experiment_id,
            "arm": arm,
            "engine": engine,
            **inst,
            "page_index": 0 if rng.random() < c.p_first_page else rng.randint(1, 3),
            "n_organic": 10,
            "ads_top_count": ads,
            "box": box,
            "ssr_positions": ssr,
            "n_candidates": int(10 ** rng.uniform(4, 9.5)),
            "identified": rng.random() >= c.p_unidentified,
        }
        events = []
        if c.emit_views:
            events.append(
                {
                    "type": "serp_view",
                    "event_id": str(uuid.uuid4()),
                    **context,
                }
            )
        if rng.random() < c.p_click:
            dist = click_distribution(arm, ads > 0, box != "none")
            outcome = rng.choices(list(dist), weights=list(dist.values()))[0]
            click = {
                "type": "click",
                "event_id": str(uuid.uuid4()),
                **context,
            }
            if outcome.startswith("c"):
                rank = int(outcome[1:])
                shown = display_rank(arm, rank)
                click.update(element_type="organic", original_rank=rank, display_rank=shown)
            else:
                click.update(element_type=outcome if outcome != "other" else "other")
            events.append(click)
        return events

    def events(self) -> Iterator[dict[str, Any]]:
        while True:
            yield from self.page()

    def batches(self, size: int, total: int) -> Iterator[list[dict[str, Any]]]:
        """``total`` events in batches of at most ``size``."""
        gen = self.events()
        sent = 0
        while sent < total:
            n = min(size, total - sent)
            yield [next(gen) for _ in range(n)]
            sent += n
