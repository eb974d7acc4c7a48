"""What a perfect estimator converges to on the simulated panel: the planted values.

Pure functions, no sampling. For an engine, arm and subset, the expected CTR of c_i over the
kept units (click mode: click events of installs past the burn-in, on identified first result
pages) is

    sum_j s_j sum_t P(t | j) [lam_j P_position(c_i | t, a) + (1 - lam_j) P_relevance(c_i | t, a)]
    / sum_j s_j sum_t P(t | j)

over the installs j past the burn-in (s_j their activity: each page leads to a click with the
same probability, whatever the arm, so activity is their expected share of units) and the page
types t in the subset (ads, box, a specialized block at 2 or further down, the "About N
results" class). delta and beta follow from the CTRs exactly as the report defines them
(``analytics/stats/arrangement.py``). Later result pages and unidentified pages are dropped
by the report and never counted here (the simulator reports them as unidentified control
pages, as the extension does), so both counting rules of units agree.

``calibrate`` sets the world's levels so that these expectations equal the paper's numbers
(``paper_world.PAPER_TARGETS``) for the installs drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from collectors.simulate import paper_world as pw
from collectors.simulate.paper_world import BEHAVIOURS, World, outcome_distribution

SUBSETS: dict[str, Callable[[bool, bool, bool], bool]] = {
    "all": lambda ads, box, ssr2: True,
    "box": lambda ads, box, ssr2: box,
    "ads_or_box": lambda ads, box, ssr2: ads or box,
    "no_ads_no_box": lambda ads, box, ssr2: not ads and not box,
    "ads_no_box": lambda ads, box, ssr2: ads and not box,
    "ssr_c1_c2": lambda ads, box, ssr2: ssr2,
    "no_ssr_c1_c2": lambda ads, box, ssr2: not ssr2,
    "ads": lambda ads, box, ssr2: ads,  # not a report subset: the ad share's pages
}
"""The report's subsets the expectation can be taken over (``arrangement_subsets.SUBSETS``)."""


@dataclass(frozen=True)
class InstallTraits:
    """What of an install the expectation needs."""

    activity: float
    position_share: float
    commercial: float
    kept: bool
    """Past the burn-in for the whole simulated study."""


def page_probabilities(world: World, engine: str, commercial: float) -> dict[tuple[bool, bool], float]:
    """P(ads, box) of one install's page: its commercial propensity scales both chances (a
    certain or impossible box or ads stay so). Box pages carry ads with ``P_ADS_GIVEN_BOX``;
    the other pages as keeps the share of pages with ads at the install's."""
    m = world.engine(engine)
    p_box = m.p_box if m.p_box in (0.0, 1.0) else min(1.0, m.p_box * commercial)
    p_ads = m.p_ads if m.p_ads in (0.0, 1.0) else min(1.0, m.p_ads * commercial)
    ads_box = pw.P_ADS_GIVEN_BOX
    ads_no_box = 0.0 if p_box >= 1 else min(max((p_ads - p_box * ads_box) / (1 - p_box), 0.0), 1.0)
    return {
        (True, True): p_box * ads_box,
        (False, True): p_box * (1 - ads_box),
        (True, False): (1 - p_box) * ads_no_box,
        (False, False): (1 - p_box) * (1 - ads_no_box),
    }


@dataclass(frozen=True)
class CellWeights:
    """Per engine and (ads, box): the kept installs' summed unit weight, and that weight times
    their share of position-driven clicks (what the linear mixture needs of them)."""

    by_engine: tuple[tuple[str, tuple[tuple[tuple[bool, bool], float, float], ...]], ...]

    def of(self, engine: str) -> list[tuple[tuple[bool, bool], float, float]]:
        return list(dict(self.by_engine)[engine])


CELLS: tuple[tuple[bool, bool], ...] = ((True, True), (True, False), (False, True), (False, False))
"""(ads, box) of a page."""


def cell_weights(world: World, installs: Sequence[InstallTraits], engines: Iterable[str]) -> CellWeights:
    out: list[tuple[str, tuple[tuple[tuple[bool, bool], float, float], ...]]] = []
    for engine in engines:
        sums: dict[tuple[bool, bool], list[float]] = {cell: [0.0, 0.0] for cell in CELLS}
        for inst in installs:
            if not inst.kept:
                continue
            for cell, p in page_probabilities(world, engine, inst.commercial).items():
                sums[cell][0] += inst.activity * p
                sums[cell][1] += inst.activity * p * inst.position_share
        out.append((engine, tuple((cell, w0, w1) for cell, (w0, w1) in sums.items())))
    return CellWeights(tuple(out))


def expected_shares(
    world: World, weights: CellWeights, engine: str, arm: str, subset: str = "all"
) -> dict[str, float]:
    """Expected share of kept units of each outcome (``paper_world.OUTCOMES``) in the subset."""
    m = world.engine(engine)
    keep = SUBSETS[subset]
    total = 0.0
    acc = dict.fromkeys(pw.OUTCOMES, 0.0)
    plan = pw.parse_arm(arm)
    classes = range(len(pw.N_CLASS_RHO)) if plan is not None and plan.swap is not None else (2,)
    ssr_mix = (
        (True, True, m.p_ssr2),
        (False, True, (1 - m.p_ssr2) * m.p_ssr_elsewhere),
        (False, False, (1 - m.p_ssr2) * (1 - m.p_ssr_elsewhere)),
    )
    for (ads, box), w0, w1 in weights.of(engine):
        for ssr2, has_ssr, p_ssr in ssr_mix:
            if not keep(ads, box, ssr2) or p_ssr == 0 or w0 == 0:
                continue
            total += w0 * p_ssr
            for n_class in classes:
                share = p_ssr / len(classes)
                for behaviour, w in zip(BEHAVIOURS, (w1, w0 - w1), strict=True):
                    dist = outcome_distribution(
                        world, engine, behaviour, arm, ads, box, ssr2, has_ssr, n_class
                    )
                    for k, v in dist.items():
                        acc[k] += w * share * v
    return {k: (v / total if total else math.nan) for k, v in acc.items()}


def expected_ctr(
    world: World, weights: CellWeights, engine: str, arm: str, subset: str = "all"
) -> list[float]:
    """Expected CTR of c1..c10."""
    shares = expected_shares(world, weights, engine, arm, subset)
    return [shares[f"c{r}"] for r in range(1, 11)]


# --------------------------------------------------------------------------- calibration


def _solve(f: Callable[[float], float], x0: float, lo: float, hi: float) -> float:
    """A root of f in [lo, hi] by the secant method from x0 (f nearly linear), bisection
    when a step leaves the bracket."""
    x1 = min(hi, max(lo, x0 * 1.02 if x0 else 0.01))
    f0, f1 = f(x0), f(x1)
    for _ in range(40):
        if abs(f1) < 1e-12 or f1 == f0:
            return x1
        x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
        if not lo <= x2 <= hi:
            x2 = (lo + hi) / 2 if not lo <= x1 <= hi else (x1 + (hi if x2 > hi else lo)) / 2
        x0, f0, x1 = x1, f1, x2
        f1 = f(x1)
    return x1


TOLERANCE = 1e-6
"""Calibration stops when every target is met this closely."""


def calibrate(world: World, weights: CellWeights) -> World:
    """The world whose exact expectations on these installs are the paper's numbers: Google's
    c1 and c2 under control, delta of each paper swap, Bing's c1 and delta_1, the Figure 5
    distortions (three set, the fourth implied), and the ad and box click shares."""
    engines = {e for e, _ in weights.by_engine}

    def ctr(w: World, engine: str, arm: str, rank: int, subset: str = "all") -> float:
        return expected_shares(w, weights, engine, arm, subset)[f"c{rank}"]

    def box_ratio(w: World, arm: str, baseline: str) -> float:
        return ctr(w, "google", arm, 1, "box") / ctr(w, "google", baseline, 1, "box")

    def level(engine: str, rank: int, target: float) -> Callable[[World], float]:
        return lambda w: ctr(w, engine, "control", rank) - target

    def gap(engine: str, swap: str, rank: int, target: float) -> Callable[[World], float]:
        return lambda w: ctr(w, engine, swap, rank) - ctr(w, engine, "control", rank) - target

    steps: list[Step] = []
    if "google" in engines:
        steps += [
            Step(  # Figure 5: hide_box against hide_ads_box (ads shown or not) sets g_ads_1
                lambda w: (
                    box_ratio(w, "hide_box", "hide_ads_box")
                    - (1 - pw.BOX_ADD_ADS_BOX_BETA_1) / (1 - pw.BOX_ADD_BOX_BETA_1)
                ),
                "g_ads_1",
                (0.2, 1.0),
            ),
            Step(
                lambda w: box_ratio(w, "control", "hide_box") - (1 - pw.BOX_ADD_BOX_BETA_1),
                "g_box_1",
                (0.2, 1.0),
            ),
            Step(
                lambda w: box_ratio(w, "swap_1_2", "hide_ads_box") - (1 - pw.BOX_SWAP_ADD_ADS_BOX_BETA_1),
                "box_rho_exp",
                (0.05, 3.0),
            ),
            Step(
                lambda w: expected_shares(w, weights, "google", "control", "ads")["ad"] - pw.AD_CLICK_SHARE,
                "g_ads_rest",
                (0.2, 1.0),
            ),
            Step(
                lambda w: (
                    expected_shares(w, weights, "google", "control", "box")["shopping_box"]
                    - pw.BOX_CLICK_SHARE
                ),
                "g_box_rest",
                (0.2, 1.0),
            ),
        ]
    for engine, c1, c2, deltas in (
        (
            "google",
            pw.GOOGLE_CONTROL_C1,
            pw.GOOGLE_CONTROL_C2,
            (("swap_1_2", 1, pw.GOOGLE_SWAP_1_2_DELTA_1), ("swap_1_3", 1, pw.GOOGLE_SWAP_1_3_DELTA_1),
             ("swap_2_3", 2, pw.GOOGLE_SWAP_2_3_DELTA_2)),
        ),
        ("bing", pw.BING_CONTROL_C1, None, (("swap_1_2", 1, pw.BING_SWAP_1_2_DELTA_1),)),
    ):  # fmt: skip
        if engine not in engines:
            continue
        steps.append(Step(level(engine, 1, c1), f"{engine}.c1", (0.05, 0.75)))
        if c2 is not None:
            steps.append(Step(level(engine, 2, c2), f"{engine}.c2", (0.02, 0.4)))
        for swap, rank, delta in deltas:
            steps.append(Step(gap(engine, swap, rank, delta), f"{engine}.{swap}", (0.01, 0.98)))
    for _ in range(30):
        before = world
        for step in steps:
            current = world

            def f(x: float, step: Step = step, base: World = current) -> float:
                return step.objective(set_parameter(base, step.parameter, x))

            x = _solve(f, get_parameter(current, step.parameter), *step.bounds)
            world = set_parameter(current, step.parameter, x)
        if max(abs(step.objective(world)) for step in steps) < TOLERANCE or world == before:
            break
    return world


@dataclass(frozen=True)
class Step:
    """One calibration target: the parameter that sets it, and its bounds."""

    objective: Callable[[World], float]
    parameter: str
    bounds: tuple[float, float]


def get_parameter(world: World, name: str) -> float:
    """A world-wide factor (``g_ads_1``), an engine's level (``google.c1``) or its swap
    (``google.swap_1_2``)."""
    if "." not in name:
        return float(getattr(world, name))
    engine, key = name.split(".")
    m = world.engine(engine)
    return float(getattr(m, key)) if key in ("c1", "c2") else dict(m.rho)[key]


def set_parameter(world: World, name: str, value: float) -> World:
    if "." not in name:
        changes: dict[str, Any] = {name: value}
        return replace(world, **changes)
    engine, key = name.split(".")
    if key in ("c1", "c2"):
        return world.with_engine(engine, **{key: value})
    m = world.engine(engine)
    return world.with_engine(engine, rho=tuple((s, value if s == key else r) for s, r in m.rho))


# --------------------------------------------------------------------------- planted rows


@dataclass(frozen=True)
class Planted:
    engine: str
    subset: str
    baseline: str
    arm: str
    quantity: Literal["ctr", "delta", "beta"]
    rank: int
    value: float

    def row(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "subset": self.subset,
            "baseline": self.baseline,
            "arm": self.arm,
            "quantity": self.quantity,
            "rank": self.rank,
            "value": self.value,
        }


BOX_BASELINES = ("hide_box", "hide_ads_box")


def planted_values(
    world: World,
    weights: CellWeights,
    arms_by_engine: Mapping[str, Sequence[str]],
    *,
    ranks: int = 6,
    box_ranks: int = 3,
    unit_mode: str = "click",
    p_click: float = 1.0,
) -> list[Planted]:
    """Every planted value: per engine, subset ``all`` against control (ranks 1..``ranks``),
    and subset ``box`` against each hide baseline the engine runs (ranks 1..``box_ranks``):
    the CTR of every arm, delta and beta of every other arm. In impression mode a unit is a
    page view: CTR and delta are ``p_click`` times their click-mode values, beta the same.
    Values a perfect estimator has no number for (a subset without units, beta against a CTR
    of 0) are left out."""
    scale = p_click if unit_mode == "impression" else 1.0
    out: list[Planted] = []
    for engine, arms in arms_by_engine.items():
        tables = [("all", "control", ranks)]
        tables += [("box", b, box_ranks) for b in BOX_BASELINES if b in arms]
        ctrs = {}
        for subset, baseline, n in tables:
            for arm in arms:
                if (subset, arm) not in ctrs:
                    ctrs[subset, arm] = [c * scale for c in expected_ctr(world, weights, engine, arm, subset)]
            base = ctrs[subset, baseline]
            for arm in arms:
                for r in range(1, n + 1):
                    value = ctrs[subset, arm][r - 1]
                    out.append(Planted(engine, subset, baseline, arm, "ctr", r, value))
                    if arm == baseline:
                        continue
                    delta = value - base[r - 1]
                    out.append(Planted(engine, subset, baseline, arm, "delta", r, delta))
                    beta = -delta / base[r - 1] if base[r - 1] else math.nan
                    out.append(Planted(engine, subset, baseline, arm, "beta", r, beta))
    return [p for p in out if math.isfinite(p.value)]
