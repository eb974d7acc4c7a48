"""Issue 38, Done means 3: the planner (``auditstream plan size``) against the interval widths
the project's simulator of the paper's world achieves, at three study sizes.

Run: ``python -m bench.planner_check --studies 50 --jobs 2``. Figures in ``bench/README.md``
("Issue 38: the planner against the simulator").

Studies. At each size (``SIZES``: the paper's 85 installs x 30 days, 300 x 14, 1000 x 7, at
the paper's click units per install-day, 45,625 / 85 / 150 = 3.58) ``--studies`` studies are
drawn with ``collectors/simulate``: ``ExtensionTraffic`` (calibrated on each study's own
installs, so each plants the paper's numbers), the paper's seven arms at weights 4:1:1:1:1:1:1,
Google only, every install past the burn-in (so the installs are the size's), one click per
page. Its pages are counted in-process as the report counts them, not through Kafka: a unit is
a click on an identified first result page, a click at c1 an organic click on the result the
engine ranked first. Each study's interval is the service's own: ``figure3_arrays`` (200
Poisson replicates of seed 0, the percentile rule) cut as the report cuts it
(``within_range``), for delta_1 and beta_1 of ``swap_1_2``. Achieved: the median half-width
over the studies.

Predictions, all by ``planner.half_width`` (what ``plan size`` prints):

- **simulator**: the planner's ``World`` with the simulator's own parameters
  (``simulator_world``), computed from its click model on a panel of installs it draws, not
  fitted to any width: the control CTR and gap, the SD of installs' control CTR at c1, the
  slope of installs' CTR under the arm on their control CTR (``arm_factor``), the activity's
  coefficient of variation;
- **simulator, proportional**: the same under the planner's proportional model (the arm
  factor R_a / R_0 instead of the measured slope), what ``world_from_pilot`` assumes;
- **paper**: ``planner.paper_world()`` at the size, with its stated assumptions (between-
  install SD 0.2, activity cv 1): what ``plan size`` says when told nothing but the size;
- **pilot**: ``planner.world_from_pilot`` on the first ``PILOT_DAYS`` days of the first study
  of the paper's size (what ``plan size --pilot`` asks the service for), scaled to each size;
  and the spread of that prediction over the pilots of every study of the paper's size.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from multiprocessing import get_context

import numpy as np

from analytics.stats import planner
from analytics.stats.arrangement_table import PerInstallArrays, figure3_arrays, within_range
from analytics.stats.bootstrap import install_key
from bench.common import git_sha
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from collectors.simulate.planted import InstallTraits, cell_weights, expected_ctr

ARMS: tuple[tuple[str, float], ...] = (
    ("control", 4),
    ("swap_1_2", 1),
    ("swap_1_3", 1),
    ("swap_2_3", 1),
    ("hide_ads_box", 1),
    ("hide_ads_box_swap_1_2", 1),
    ("hide_box", 1),
)
"""The paper's design: control 4, six arms 1 each (``planner.paper_world``'s weights)."""
NAMES = tuple(a for a, _ in ARMS)
WEIGHTS = np.array([w for _, w in ARMS], dtype=np.float64)
ARM, BASELINE = NAMES.index("swap_1_2"), NAMES.index("control")
CLICKS_PER_DAY = planner.PAPER_CLICKS / planner.PAPER_INSTALLS / planner.PAPER_DAYS
SIZES: tuple[tuple[int, float], ...] = ((85, 30.0), (300, 14.0), (1000, 7.0))
PILOT_DAYS = 7.0
GOAL = 0.15
"""Done means 3: predicted within 15% of the achieved median half-width."""
SEED = 38_000
PANEL = 4000
"""Installs drawn to measure the simulator's parameters (``simulator_world``)."""


def traffic_config(installs: int, seed: int) -> TrafficConfig:
    return TrafficConfig(
        experiment_id="planner-check",
        arms=ARMS,
        engines=(("google", 1.0),),
        installs=installs,
        p_new_install=0.0,
        p_click=1.0,
        emit_views=False,
        seed=seed,
    )


@dataclass(frozen=True)
class Counts:
    """Per-install counts of a study: units [install, arm], clicks at c1 [install, arm, 1]."""

    install_ids: tuple[str, ...]
    units: np.ndarray
    clicks: np.ndarray


@dataclass(frozen=True)
class Study:
    counts: Counts
    pilot: Counts | None
    """The counts after the first ``pilot_days`` (None: not asked)."""


def simulate_study(installs: int, days: float, seed: int, pilot_days: float | None = None) -> Study:
    """A study of ``installs`` x ``days`` drawn by the simulator and counted as the report
    counts: click units on identified first pages, organic clicks at original rank 1."""
    traffic = ExtensionTraffic(traffic_config(installs, seed))
    ids = tuple(str(inst["install_id"]) for inst in traffic.installs)
    row = {install_id: i for i, install_id in enumerate(ids)}
    code = {name: a for a, name in enumerate(NAMES)}
    units = np.zeros((installs, len(NAMES)))
    clicks = np.zeros((installs, len(NAMES), 1))
    # as many pages as give the size's units once unidentified pages are dropped
    pages = round(installs * days * CLICKS_PER_DAY / (1 - traffic.config.p_unidentified))
    pilot_at = round(pages * pilot_days / days) if pilot_days is not None else -1
    pilot = None
    for page in range(pages):
        if page == pilot_at:
            pilot = Counts(ids, units.copy(), clicks.copy())
        for event in traffic.page():
            if event["type"] != "click" or not event["identified"] or event["page_index"] != 0:
                continue
            i, a = row[event["install_id"]], code[event["arm"]]
            units[i, a] += 1
            if event["element_type"] == "organic" and event["original_rank"] == 1:
                clicks[i, a, 0] += 1
    if pilot_at == pages:
        pilot = Counts(ids, units.copy(), clicks.copy())
    return Study(Counts(ids, units, clicks), pilot)


def achieved_half_widths(counts: Counts) -> tuple[float, float]:
    """The service's 95% interval of swap_1_2's delta_1 and beta_1 on these counts (the
    report's bootstrap, seed 0, cut as the report cuts it): their half-widths (NaN: none)."""
    rows, arms = np.nonzero(counts.units)
    keys = np.array([install_key(i, 0) for i in counts.install_ids], dtype=np.uint64)
    arrays = PerInstallArrays(
        keys=keys[rows],
        arm_codes=arms.astype(np.int64),
        arm_names=list(NAMES),
        units=counts.units[rows, arms],
        clicks=counts.clicks[rows, arms, :1],
    )
    table = within_range(figure3_arrays(arrays, ranks=1, seed=0), NAMES[BASELINE])
    row = next((r for r in table if r.arm == NAMES[ARM]), None)
    if row is None or not row.delta:
        return math.nan, math.nan
    delta, beta = row.delta[0], row.beta[0]
    return (delta.ci_high - delta.ci_low) / 2, (beta.ci_high - beta.ci_low) / 2


def simulator_world(installs: int, days: float, panel: int = PANEL, grid: int = 21) -> planner.World:
    """The planner's ``World`` of the simulator's world at this size, from its click model.

    On a panel of ``panel`` installs the simulator draws (and calibrates on), each install's
    exact expected CTR at c1 under every arm (``planted.expected_ctr``; linear in its share of
    position-driven clicks, so computed at shares 0 and 1 on a grid of its commercial
    propensity and interpolated). Then: ctr and delta the activity-weighted means (the planted
    values), ctr_sd the SD of installs' control CTR, arm_factor the slope of their swap_1_2
    CTR on it, activity_cv the panel's, pooled_factor the pooled CTR over the control CTR."""
    traffic = ExtensionTraffic(traffic_config(panel, SEED - 1))
    world = traffic.world
    commercial = np.linspace(0.0, 2.0, grid)  # 2 x Beta(2, 2)
    at = np.zeros((2, grid, len(NAMES)))  # [position share 0 or 1, commercial, arm]
    for s, share in enumerate((0.0, 1.0)):
        for g, c in enumerate(commercial.tolist()):
            weights = cell_weights(world, [InstallTraits(1.0, share, c, True)], ["google"])
            at[s, g] = [expected_ctr(world, weights, "google", arm)[0] for arm in NAMES]
    traits = traffic.traits
    lam = np.array([t.position_share for t in traits])
    com = np.array([t.commercial for t in traits])
    activity = np.array([t.activity for t in traits])
    by_share = [
        np.stack([np.interp(com, commercial, at[s, :, a]) for a in range(len(NAMES))], axis=1) for s in (0, 1)
    ]
    ctr = (1 - lam)[:, None] * by_share[0] + lam[:, None] * by_share[1]  # [install, arm]
    mean = activity @ ctr / activity.sum()
    control, arm = ctr[:, BASELINE], ctr[:, ARM]
    slope = float(np.cov(arm, control)[0, 1] / control.var(ddof=1))
    return planner.World(
        installs=installs,
        days=days,
        clicks_per_day=CLICKS_PER_DAY,
        ctr=float(mean[BASELINE]),
        delta=float(mean[ARM] - mean[BASELINE]),
        ctr_sd=float(control.std(ddof=1)),
        arm_weight=float(WEIGHTS[ARM]),
        baseline_weight=float(WEIGHTS[BASELINE]),
        total_weight=float(WEIGHTS.sum()),
        activity_cv=float(activity.std(ddof=1) / activity.mean()),
        pooled_factor=float(WEIGHTS @ mean / WEIGHTS.sum() / mean[BASELINE]),
        arm_factor=slope,
    )


def pilot_world(pilot: Counts, days: float = PILOT_DAYS) -> planner.World:
    """What ``plan size --pilot`` estimates from a pilot's counts (``world_from_pilot``)."""
    return planner.world_from_pilot(pilot.units, pilot.clicks, WEIGHTS, ARM, 0, days, baseline=BASELINE)


@dataclass(frozen=True)
class StudyResult:
    half_delta: float
    half_beta: float
    pilot: planner.World | None


def run_one(task: tuple[int, float, int, float | None]) -> StudyResult:
    installs, days, seed, pilot_days = task
    study = simulate_study(installs, days, seed, pilot_days)
    half_delta, half_beta = achieved_half_widths(study.counts)
    pilot = pilot_world(study.pilot, pilot_days) if study.pilot is not None and pilot_days else None
    return StudyResult(half_delta, half_beta, pilot)


Spread = tuple[float, float, float]
"""10th percentile, median, 90th."""
STATISTICS = ("delta", "beta")


@dataclass(frozen=True)
class SizeResult:
    """One size: the achieved median half-widths and each prediction's, (delta_1, beta_1)."""

    installs: int
    days: float
    studies: int
    achieved: tuple[float, float]
    achieved_se: tuple[float, float]
    """The medians' Monte Carlo standard errors, relative (a bootstrap over the studies)."""
    predicted: dict[str, tuple[float, float]]
    pilot_spread: dict[str, Spread] | None
    """Per statistic: predicted / achieved over the pilots of every study of the paper's
    size, each scaled to this size."""
    pilot: planner.World | None
    """The pilot behind the "pilot" prediction (the first study's), at its own size."""

    def ratios(self) -> dict[str, tuple[float, float]]:
        return {name: (d / self.achieved[0], b / self.achieved[1]) for name, (d, b) in self.predicted.items()}

    def within_goal(self, name: str) -> bool:
        return all(abs(r - 1) <= GOAL for r in self.ratios()[name])


def median_and_se(values: Sequence[float], seed: int) -> tuple[float, float]:
    """The median of the finite values and its relative standard error (1,000 resamples)."""
    x = np.asarray([v for v in values if math.isfinite(v)])
    median = float(np.median(x))
    draws = np.random.default_rng(seed).integers(0, x.size, (1000, x.size))
    return median, float(np.median(x[draws], axis=1).std() / median)


def predictions(world: planner.World, pilot: planner.World | None) -> dict[str, tuple[float, float]]:
    """Each prediction of (delta_1, beta_1) half-width at ``world``'s size."""
    worlds = {
        "simulator": world,
        "simulator, proportional": replace(world, arm_factor=None),
        "paper": replace(planner.paper_world(), installs=world.installs, days=world.days),
    }
    if pilot is not None:
        worlds["pilot"] = replace(pilot, installs=world.installs, days=world.days)
    return {
        name: (planner.half_width(w, "delta"), planner.half_width(w, "beta")) for name, w in worlds.items()
    }


def compare(
    sizes: Sequence[tuple[int, float]],
    studies: int,
    seed: int = SEED,
    jobs: int = 1,
    pilot_days: float = PILOT_DAYS,
    panel: int = PANEL,
) -> list[SizeResult]:
    """Simulate ``studies`` studies at each size and compare their median half-widths with
    the planner's predictions. The pilots are taken from the studies of the first size."""
    tasks = [
        (installs, days, seed + 1000 * k + s, pilot_days if k == 0 else None)
        for k, (installs, days) in enumerate(sizes)
        for s in range(studies)
    ]
    if jobs > 1:
        with get_context("spawn").Pool(jobs) as pool:
            results = pool.map(run_one, tasks, chunksize=1)
    else:
        results = [run_one(t) for t in tasks]
    pilots = [r.pilot for r in results[:studies] if r.pilot is not None]
    base = simulator_world(1, 1.0, panel)
    out = []
    for k, (installs, days) in enumerate(sizes):
        mine = results[k * studies : (k + 1) * studies]
        delta, delta_se = median_and_se([r.half_delta for r in mine], seed)
        beta, beta_se = median_and_se([r.half_beta for r in mine], seed)
        spread = None
        if pilots:
            scaled = [replace(p, installs=installs, days=days) for p in pilots]
            spread = {}
            for stat, achieved in zip(STATISTICS, (delta, beta), strict=True):
                ratio = [planner.half_width(p, stat) / achieved for p in scaled]
                lo, mid, hi = (float(q) for q in np.percentile(ratio, [10, 50, 90]))
                spread[stat] = (lo, mid, hi)
        pilot = pilots[0] if pilots else None
        world = replace(base, installs=installs, days=days)
        predicted = predictions(world, pilot)
        out.append(
            SizeResult(installs, days, studies, (delta, beta), (delta_se, beta_se), predicted, spread, pilot)
        )
    return out


def report(results: Sequence[SizeResult]) -> list[str]:
    """The results as the Markdown tables of bench/README.md."""
    names = list(results[0].predicted)
    lines = [
        "| size | statistic | achieved (MC se) | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for r in results:
        ratios = r.ratios()
        for s, stat in enumerate(STATISTICS):
            cells = [f"{r.predicted[n][s]:.4f} ({ratios[n][s] - 1:+.1%})" for n in names]
            size = f"{r.installs} x {r.days:g} days" if s == 0 else ""
            achieved = f"{r.achieved[s]:.4f} ({r.achieved_se[s]:.1%})"
            lines.append(f"| {size} | {stat}_1 | {achieved} | " + " | ".join(cells) + " |")
    if results[0].pilot_spread is not None:
        lines += ["", "| size | pilots: delta_1 predicted / achieved | beta_1 |", "|---|---|---|"]
        for r in results:
            spread = r.pilot_spread or {}
            cells = [", ".join(f"{q:.3f}" for q in spread.get(stat, (math.nan,) * 3)) for stat in STATISTICS]
            lines.append(f"| {r.installs} x {r.days:g} days | " + " | ".join(cells) + " |")
    if results[0].pilot is not None:
        lines.append(f"the pilot's world: {results[0].pilot}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--studies", type=int, default=50, help="simulated studies per size")
    parser.add_argument("--jobs", type=int, default=1, help="processes")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    start = time.perf_counter()
    print(
        f"planner_check at {git_sha()}, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC: "
        f"{args.studies} studies per size, sizes {SIZES}, pilot the first {PILOT_DAYS:g} days",
        file=sys.stderr,
    )
    results = compare(SIZES, args.studies, args.seed, args.jobs)
    world = simulator_world(1, 1.0)
    print(f"the simulator's world: {world}")
    for line in report(results):
        print(line)
    print(f"took {time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
