"""Extension traffic of the Powermeter paper's world, generated from a seed (pure; no I/O).

The click model and its calibration are ``paper_world.py`` and ``planted.py``: the world is
calibrated on the installs drawn here, so that the panel's exact expectations are the paper's
Figure 3 and Figure 5 values (``ExtensionTraffic.planted``). Page-mix overrides
(``p_box``, ``p_ads``) change the pages after that calibration, not the click model.
"""

from __future__ import annotations

import bisect
import itertools
import random
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

from collectors.simulate import paper_world as pw
from collectors.simulate.planted import (
    CellWeights,
    InstallTraits,
    Planted,
    calibrate,
    cell_weights,
    page_probabilities,
    planted_values,
)
from schemas.assignment import assign_arm
from schemas.events import utc_text

DEFAULT_ARMS: tuple[tuple[str, float], ...] = (
    ("control", 0.40),
    ("swap_1_2", 0.15),
    ("swap_1_3", 0.15),
    ("swap_2_3", 0.10),
    ("hide_box", 0.10),
    ("hide_ads_box", 0.10),
)
"""The arms when no registered experiment says otherwise."""
CALIBRATED_ENGINES = ("google", "bing")


@dataclass
class TrafficConfig:
    experiment_id: str = "demo"
    salt: str = "demo-salt"
    arms: Sequence[tuple[str, float]] = DEFAULT_ARMS
    engines: Sequence[tuple[str, float]] = pw.UNCALIBRATED.engine_shares
    engine_arms: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Engines that run only some arms (as an experiment's ``engine_arms``)."""
    installs: int = 500
    p_new_install: float = 0.1
    """Installed within the burn-in window: their clicks are dropped by the report."""
    burn_in_days: int = 4
    p_click: float = 0.6
    """A page view leads to a click, whatever the arm (so units follow the weights)."""
    p_ads: float | None = None
    """Share of pages with top ads, every engine (None: the world's, per engine)."""
    p_box: float | None = None
    """Share of pages with a shopping box, every engine (None: the world's, 3.2% on Google)."""
    p_unidentified: float = 0.02
    p_first_page: float = 1.0
    """Searches on a first result page; the rest (pages 2-4) are unidentified, as in the extension."""
    emit_views: bool = True
    seed: int = 1
    today: date = field(default_factory=lambda: datetime.now(UTC).date())
    world: pw.World = pw.UNCALIBRATED
    """The paper's world, calibrated on the drawn installs by ``ExtensionTraffic``."""


def _weighted(rng: random.Random, options: Sequence[tuple[str, float]]) -> str:
    return rng.choices([o for o, _ in options], weights=[w for _, w in options])[0]


@lru_cache(maxsize=32)
def _calibrated(world: pw.World, weights: CellWeights) -> pw.World:
    return calibrate(world, weights)


class ExtensionTraffic:
    """Yields event dicts ready to post.

    Everything but the event ids follows the seed. Event ids are fresh random UUIDs,
    as real clients make them: the pipeline deduplicates by event id across all
    experiments, so seeded ids would make two runs with one seed look like retries.
    """

    def __init__(self, config: TrafficConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.installs: list[dict[str, Any]] = []
        self.traits: list[InstallTraits] = []
        for _ in range(config.installs):
            context, traits = self._install()
            self.installs.append(context)
            self.traits.append(traits)
        # a panel with no install past the burn-in has no kept units: calibrate on all of them
        basis = (
            self.traits if any(t.kept for t in self.traits) else [replace(t, kept=True) for t in self.traits]
        )
        weights = cell_weights(config.world, basis, CALIBRATED_ENGINES)
        world = _calibrated(config.world, weights)
        changes = {k: v for k, v in (("p_box", config.p_box), ("p_ads", config.p_ads)) if v is not None}
        for engine, _ in world.engines if changes else ():
            world = world.with_engine(engine, **changes)
        self.world = world
        self._cumulative = list(itertools.accumulate(t.activity for t in self.traits))
        self._cells: dict[tuple[int, str], tuple[list[tuple[bool, bool]], list[float]]] = {}
        self._dists: dict[tuple[Any, ...], tuple[list[str], list[float]]] = {}

    def _install(self) -> tuple[dict[str, Any], InstallTraits]:
        c, rng = self.config, self.rng
        new = rng.random() < c.p_new_install and c.burn_in_days > 0
        age = rng.randint(0, c.burn_in_days - 1) if new else rng.randint(c.burn_in_days, c.burn_in_days + 116)
        context = {
            "install_id": uuid.UUID(int=rng.getrandbits(128)).hex[:20],
            "install_day": (c.today - timedelta(days=age)).isoformat(),
            "extension_version": rng.choice(["1.4.0", "1.4.1", "1.5.0"]),
            "ui_lang": rng.choice(["de", "de-CH", "fr", "en", "it"]),
        }
        traits = InstallTraits(
            activity=rng.gammavariate(1.5, 1.0),
            position_share=rng.betavariate(3, 2),
            commercial=2 * rng.betavariate(2, 2),
            kept=not new,
        )
        return context, traits

    # ------------------------------------------------------------------ planted values

    def arms_by_engine(self) -> dict[str, list[str]]:
        c = self.config
        return {e: list(c.engine_arms.get(e, [a for a, _ in c.arms])) for e, _ in c.engines}

    def planted(self, *, unit_mode: str = "click") -> list[Planted]:
        """The exact expectations a perfect estimator converges to on this panel (click mode:
        units are kept click events; impression mode: kept page views)."""
        arms = self.arms_by_engine()
        weights = cell_weights(self.world, self.traits, arms)
        return planted_values(self.world, weights, arms, unit_mode=unit_mode, p_click=self.config.p_click)

    # ------------------------------------------------------------------ events

    def profiles(self) -> list[dict[str, Any]]:
        """One ``install_profile`` per install, from margins standing in for Figure 9's (age
        and languages; assumed, as are country and search frequency: the paper's text gives no
        numbers). Drawn from a generator of their own so the pages do not depend on whether
        profiles are sent."""
        rng = random.Random(f"profiles:{self.config.seed}")
        out = []
        for inst in self.installs:
            answers: dict[str, Any]
            if rng.random() < pw.P_CONSENT_DECLINED:
                answers = {"consent": "declined"}
            else:
                languages = [lang for lang, p in pw.SEARCH_LANGUAGES.items() if rng.random() < p]
                answers = {
                    "consent": "given",
                    "age_band": _weighted(rng, list(pw.AGE_BANDS.items())),
                    "search_languages": languages or [_weighted(rng, list(pw.SEARCH_LANGUAGES.items()))],
                    "country": _weighted(rng, list(pw.COUNTRIES.items())),
                    "search_frequency": _weighted(rng, list(pw.SEARCH_FREQUENCIES.items())),
                }
            out.append(
                {
                    "type": "install_profile",
                    "event_id": str(uuid.uuid4()),
                    "schema_version": 1,
                    "sent_at": utc_text(datetime.now(UTC)),
                    "install_id": inst["install_id"],
                    "install_day": inst["install_day"],
                    "extension_version": inst["extension_version"],
                    "experiment_id": self.config.experiment_id,
                    **answers,
                }
            )
        return out

    def _cell(self, index: int, engine: str) -> tuple[bool, bool]:
        key = (index, engine)
        if key not in self._cells:
            probs = page_probabilities(self.world, engine, self.traits[index].commercial)
            self._cells[key] = (list(probs), list(probs.values()))
        cells, weights = self._cells[key]
        return self.rng.choices(cells, weights=weights)[0]

    def _outcome(self, key: tuple[Any, ...]) -> str:
        if key not in self._dists:
            dist = pw.outcome_distribution(self.world, *key)
            self._dists[key] = (list(dist), list(itertools.accumulate(dist.values())))
        names, cumulative = self._dists[key]
        return names[min(bisect.bisect(cumulative, self.rng.random() * cumulative[-1]), len(names) - 1)]

    def page(self) -> list[dict[str, Any]]:
        """One search: a serp_view (optional) and maybe a click."""
        c, rng = self.config, self.rng
        index = bisect.bisect(self._cumulative, rng.random() * self._cumulative[-1])
        index = min(index, len(self.installs) - 1)
        inst, traits = self.installs[index], self.traits[index]
        query_token = f"q{rng.getrandbits(40)}"  # stands in for the query, which never leaves
        engine = _weighted(rng, c.engines)
        m = self.world.engine(engine)
        ads, has_box = self._cell(index, engine)
        box = ("top" if rng.random() < 0.75 else "side") if has_box else "none"
        ssr2 = rng.random() < m.p_ssr2
        has_ssr = ssr2 or rng.random() < m.p_ssr_elsewhere
        if ssr2:
            ssr = [2, *sorted(rng.sample(range(4, 11), rng.randint(0, 1)))]
        elif has_ssr:
            ssr = sorted(rng.sample(range(3, 11), rng.randint(1, 2)))
        else:
            ssr = []
        n_class = rng.randrange(len(pw.N_CLASS_RHO))
        n_candidates = int(10 ** rng.uniform(*pw.candidates_bucket_range(n_class)))
        only = c.engine_arms.get(engine)
        weights = dict(c.arms)  # in engine_arms' order, as the published config lists them
        arms = c.arms if only is None else [(a, weights[a]) for a in only]
        assigned = assign_arm(inst["install_id"], query_token, c.salt, arms)
        page_index = 0 if rng.random() < c.p_first_page else rng.randint(1, 3)
        identified = rng.random() >= c.p_unidentified and page_index == 0
        # an unidentified page is left unmodified and reported as control (extension/lib/page.js);
        # an arm the click model cannot parse changes nothing on the page (a load test's names)
        arm = assigned if identified else "control"
        context = {
            "schema_version": 1,
            "sent_at": utc_text(datetime.now(UTC)),
            "experiment_id": c.experiment_id,
            "arm": arm,
            "engine": engine,
            **inst,
            "page_index": page_index,
            "n_organic": 10,
            "ads_top_count": rng.randint(1, 4) if ads else 0,
            "box": box,
            "ssr_positions": ssr,
            "n_candidates": n_candidates,
            "identified": identified,
        }
        events = []
        if c.emit_views:
            events.append({"type": "serp_view", "event_id": str(uuid.uuid4()), **context})
        if rng.random() < c.p_click:
            behaviour = "position" if rng.random() < traits.position_share else "relevance"
            outcome = self._outcome((engine, behaviour, arm, ads, has_box, ssr2, has_ssr, n_class))
            click = {"type": "click", "event_id": str(uuid.uuid4()), **context}
            if outcome.startswith("c"):
                rank = int(outcome[1:])
                click.update(
                    element_type="organic", original_rank=rank, display_rank=pw.display_rank(arm, rank)
                )
            else:
                click.update(element_type=outcome)
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


def with_registered(config: TrafficConfig, registered: Mapping[str, Any]) -> TrafficConfig:
    """``config`` following a registered experiment (``GET /v1/experiments/{id}``'s answer or
    the public config): its arms and weights, engines, engine arms, salt and burn-in. The
    engines keep the world's shares where it has one (Bing 5%), the rest share what is left."""
    arms = registered["arms"]
    if isinstance(arms, list):  # the public config: [{"arm", "weight"}]
        arms = {a["arm"]: a["weight"] for a in arms}
    engine_arms = {
        e: [a["arm"] if isinstance(a, dict) else a for a in listed]
        for e, listed in registered.get("engine_arms", {}).items()
    }
    engines = list(registered["engines"])
    shares = dict(config.world.engine_shares)
    known = {e: shares[e] for e in engines if e in shares}
    rest = [e for e in engines if e not in shares]
    left = max(0.0, 1.0 - sum(known.values()))
    per_rest = left / len(rest) if rest else 0.0
    engine_shares = [(e, known.get(e, per_rest)) for e in engines]
    if sum(w for _, w in engine_shares) <= 0:
        engine_shares = [(e, 1.0) for e in engines]
    return replace(
        config,
        arms=tuple(arms.items()),
        engines=tuple(engine_shares),
        engine_arms=engine_arms,
        salt=registered["salt"],
        burn_in_days=int(registered.get("burn_in_days", config.burn_in_days)),
    )
