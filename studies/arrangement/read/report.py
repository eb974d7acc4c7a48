"""The arrangement-experiment report: Figure 3 (CTR, gap, distortion with CIs) and drops."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from analytics.stats.arrangement import element_shares
from analytics.stats.arrangement_table import (
    ArmRow,
    InstallArmCounts,
    PerInstallArrays,
    figure3,
    figure3_arrays,
    within_range,
)
from analytics.stats.bootstrap import replicate_weights
from analytics.stats.reweight import Targets
from core.store import Store
from studies.arrangement.answers import flatten, interval_guarantee, power_json
from studies.arrangement.arrays import element_totals, report_arrays
from studies.arrangement.read.corrections import corrections_json, reduced_json
from studies.arrangement.read.decision_line import decision_days
from studies.arrangement.read.markets import registered_allocation
from studies.arrangement.read.planted import read_planted
from studies.arrangement.read.raking import KeyedWeights, install_weights
from studies.arrangement.read.warnings import report_warnings
from studies.arrangement.selection import ReportQuery
from studies.arrangement.tables import BOX_BASELINE, BOX_RANKS, CONTROL, ELEMENTS, LEVEL, REPLICATES


def table_from_rows(
    rows: list[dict[str, Any]], ranks: int, seed: int = 0, baseline: str = "control"
) -> list[ArmRow]:
    counts = [
        InstallArmCounts(r["install_id"], r["arm"], float(r["n_units"]), [float(c) for c in r["n_clicks"]])
        for r in rows
    ]
    return figure3(counts, ranks=ranks, seed=seed, baseline=baseline)


def element_share_rows(result_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Shares of clicks per element type for each arm, with the arm's clicks."""
    out = []
    for row in result_rows:
        counts = {k: float(v) for k, v in row.items() if k != "arm"}
        shares = element_shares(counts)
        out.append(
            {
                "arm": row["arm"],
                **{k: round(v, 4) for k, v in shares.items()},
                "clicks": int(sum(counts.values())),
            }
        )
    return out


def with_share_intervals(shares: list[dict[str, Any]], table: list[ArmRow]) -> list[dict[str, Any]]:
    """The element-type shares with their 95% intervals (``<type>_ci_low``/``_ci_high``),
    from the same per-install bootstrap as Figure 3 (units: all clicks of the arm)."""
    by_arm = {row.arm: row for row in table}
    out = []
    for share in shares:
        row = by_arm.get(share["arm"])
        extra: dict[str, Any] = {}
        if row is not None:
            for name, estimate in zip(ELEMENTS, row.ctr, strict=False):
                bounds = estimate.to_json()
                extra[f"{name}_ci_low"], extra[f"{name}_ci_high"] = bounds["ci_low"], bounds["ci_high"]
        out.append({**share, **extra})
    return out


def report_statements(query: ReportQuery) -> dict[str, str]:
    """Every statement an experiment report reads, by name: the per-install counts of the
    query's subset and of the box subset (Figure 5), element shares and the drops."""
    return {
        "per_install": query.per_install_sql(),
        "box_per_install": replace(query, subset="box").per_install_sql(),
        "shares": query.element_shares_sql(),
        "drops": query.drops_sql(),
    }


@dataclass(frozen=True)
class ExperimentReport:
    """Figure 3 (CTR per position and arm, gaps and distortions against ``baseline``), the
    box subset against ``BOX_BASELINE``, click shares per element type and the drops."""

    baseline: str
    figure3: list[ArmRow]
    box: list[ArmRow]
    shares: list[dict[str, Any]]
    drops: list[dict[str, Any]]
    intervals: str = "bootstrap"
    level: float = 0.95
    reweighting: dict[str, Any] | None = None
    """With targets: the installs raked, left alone and the effective sample size; figure3
    and box are then weighted and ``unweighted`` holds the panel's own Figure 3."""
    unweighted: list[ArmRow] | None = None
    decisions: dict[str, str | None] | None = None
    """sequential intervals only: per arm, the first day the sequence for delta_1 excluded
    zero (ISO date), or None (not yet)."""
    subset_bounds: dict[str, Any] | None = None
    """An n_candidates quintile: the range of buckets it counted (``ReportQuery.subset_bounds``)."""
    markets: list[dict[str, Any]] | None = None
    """Asked for (``by_market``): per engine market, events, identified share, kept clicks per
    arm and their SRM test (``analytics/reports/markets.py``: a read of the raw events)."""
    warnings: list[dict[str, str]] = field(default_factory=list)
    """What the report says about its own numbers (``read/warnings.py``): SRM of the
    selection, a reweighting that raked nobody, arms too thin for an interval."""
    planted: list[dict[str, Any]] | None = None
    """A simulated study: the values it planted for this selection and baseline (``read/planted.py``)."""

    corrections: dict[str, Any] | None = None
    """The family's tests, corrected for their number (``read/corrections.py``)."""
    variance_reduction: dict[str, Any] | None = None
    """Asked for: variance-reduced estimates beside the plain ones (``read/corrections.py``)."""

    against_control: list[ArmRow] | None = None
    """Figure 3's c_1 against control when ``baseline`` is another arm: the performative
    power bound is defined against control whatever the report's baseline."""

    @property
    def performative_power(self) -> dict[str, Any]:
        """``PerformativePower`` (``answers.power_json``), against control."""
        if self.against_control is not None:
            return power_json(self.against_control)
        return power_json(self.figure3, self.baseline)


async def run_experiment_report(
    store: Store,
    query: ReportQuery,
    ranks: int,
    seed: int = 0,
    baseline: str = "control",
    intervals: str = "bootstrap",
    targets: Targets | None = None,
    level: float = 0.95,
    correction: str = "none",
    family: Sequence[tuple[str, str, int]] | None = None,
    variance_reduction: bool = False,
) -> ExperimentReport:
    """Read and compute an experiment report from a store: the per-install statistics go
    through the columnar path (no rows as JSON), the small tables as rows. This is what the
    board and ``POST /v1/reports/experiment`` (behind ``report experiment``) run."""
    import asyncio

    query = await with_quintile_bounds(store, query)
    box_query = replace(query, subset="box", quintile_bounds=None)
    # the raking (profiles read, then numpy) runs while ClickHouse reads the counts
    raking = (
        asyncio.ensure_future(install_weights(store, query.experiment_id, seed, targets)) if targets else None
    )
    # a report of the box subset is its own box table: its rows are read once
    own_box = query.subset == "box"
    try:
        per_install, drops, box_read, allocation, planted = await asyncio.gather(
            store.query_arrow(query.per_install_keys_sql(seed, elements=True)),
            store.query(query.drops_sql(), read_only=True),
            asyncio.sleep(0) if own_box else store.query_arrow(box_query.per_install_keys_sql(seed)),
            registered_allocation(store, query.experiment_id, query.engine),
            read_planted(store, query, baseline),
        )
    except BaseException:
        if raking is not None:
            raking.cancel()
        raise
    box = per_install if box_read is None else box_read
    tables = (per_install,) if box_read is None else (per_install, box_read)

    weight_of: KeyedWeights | None = None
    reweighting = None
    if raking is not None:
        weight_of, reweighting = await raking

    # One weight matrix for every table of the report (and the next report of the same installs).
    weights = replicate_weights(
        np.concatenate(
            [np.zeros(0, np.uint64)] + [t.column("install_key").to_numpy() for t in tables if t.num_rows]
        ),
        REPLICATES,
        seed,
    )

    def table(
        arrays: PerInstallArrays | None, ranks: int, baseline: str, weighted: bool = True
    ) -> list[ArmRow]:
        if arrays is None:
            return []
        if weighted and weight_of is not None:
            arrays = replace(arrays, weights=weight_of.lookup(arrays.keys))
        made = figure3_arrays(
            arrays, ranks, seed=seed, baseline=baseline, intervals=intervals, weight_of=weights, level=level
        )
        return within_range(made, baseline)

    positions, elements = (
        report_arrays(per_install, ranks, elements=True) if per_install.num_rows else (None, None)
    )
    box_positions = report_arrays(box, BOX_RANKS)[0] if box.num_rows else None

    decisions = None
    if intervals == "sequential" and positions is not None and level == LEVEL:  # looks are stored at 95%
        decisions = await decision_days(store, query, seed, baseline, totals=positions)
    figure = table(positions, ranks, baseline)
    box_table = table(box_positions, BOX_RANKS, BOX_BASELINE)
    drop_rows = list(drops.dicts())
    shown = {"Figure 3": figure, f"box subset against {BOX_BASELINE}": box_table}
    reduced = reduced_json(positions, ranks, baseline, allocation, level) if variance_reduction else None
    warnings = report_warnings(shown, drop_rows, allocation, reweighting)
    if variance_reduction and reduced is None and positions is not None:
        what = "no variance reduction: the registered weights of the arms in this selection are not known"
        warnings.append({"code": "no_variance_reduction", "message": what})
    return ExperimentReport(
        baseline=baseline,
        figure3=figure,
        box=box_table,
        shares=with_share_intervals(
            element_share_rows(element_totals(elements)) if elements is not None else [],
            table(elements, 5, baseline),
        ),
        drops=drop_rows,
        intervals=intervals,
        level=level,
        reweighting=reweighting,
        unweighted=table(positions, ranks, baseline, weighted=False) if targets else None,
        decisions=decisions,
        subset_bounds=query.subset_bounds(),
        warnings=warnings,
        planted=planted,
        against_control=None if baseline == CONTROL else table(positions, 1, CONTROL),
        corrections=corrections_json(
            positions, ranks, baseline, family, correction, level, sequential=intervals == "sequential"
        ),
        variance_reduction=reduced,
    )


async def with_quintile_bounds(store: Store, query: ReportQuery) -> ReportQuery:
    """A quintile query with its boundaries read once (both sets in one pass), so the
    report's statements filter on numbers instead of each computing them again (a pass over
    the selection's slices each; bench/README.md, "Figures behind the code"), and the
    report can say which range it counted. A live study's boundaries may move between this read and the next
    statement; the report then counts the range it states. Other queries: unchanged.

    When the experiment's plan froze the quintile's family (``studies/arrangement/
    quintiles.py``), its cut points are the boundaries, the same for the kept and the
    dropped units, and once the worker keeps them as named subsets (``ready``) a whole-study
    report reads the study-wide rows, as for ``box`` (issue 38). Boundaries the caller gave
    other than the frozen ones are kept (and read the per-day rows)."""
    from studies.arrangement.quintiles import read_frozen

    prefix = query.quintile_prefix
    if prefix is None:
        return query
    _, frozen = await read_frozen(store, [query.experiment_id])
    found = frozen.get(query.experiment_id)
    cuts = found.family(prefix) if found is not None else ()
    if found is not None and cuts and query.quintile_bounds in (None, (cuts, cuts)):
        return replace(
            query,
            quintile_bounds=(cuts, cuts),
            quintiles_plan=(found.version, found.sha256),
            quintiles_stored=found.ready,
        )
    if query.quintile_bounds is not None:
        return query
    row = (await store.query(query.quintile_bounds_sql(), read_only=True)).rows[0]
    kept, every = (tuple(int(b) for b in bounds) for bounds in row)
    return replace(query, quintile_bounds=(kept, every))


def report_json(report: ExperimentReport) -> dict[str, Any]:
    """The report as ``report experiment --format json`` prints it."""
    power = report.performative_power
    return {
        "baseline": report.baseline,
        "arms": flatten(report.figure3),
        "box_subset": {"baseline": BOX_BASELINE, "arms": flatten(report.box)},
        "element_shares": report.shares,
        "performative_power_lower_bound": power["value"],
        "performative_power": power,
        "preprocessing": report.drops,
        "intervals": report.intervals,
        "level": report.level,
        "interval_guarantee": interval_guarantee(report.intervals, report.level),
        "decisions": report.decisions,
        "reweighting": report.reweighting,
        "unweighted_arms": flatten(report.unweighted) if report.unweighted is not None else None,
        "subset_bounds": report.subset_bounds,
        "markets": report.markets,
        "warnings": report.warnings,
        "planted": report.planted,
        "corrections": report.corrections,
        "variance_reduction": report.variance_reduction,
    }
