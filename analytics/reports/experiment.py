"""The arrangement-experiment report: Figure 3 (CTR, gap, distortion with CIs) and drops."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Any

import numpy as np

from analytics.stats.arrangement import element_shares, performative_power_lower_bound
from analytics.stats.arrangement_subsets import QUINTILE, SUBSETS, subset_names
from analytics.stats.arrangement_table import (
    ArmRow,
    InstallArmCounts,
    PerInstallArrays,
    figure3,
    figure3_arrays,
    json_number,
)
from analytics.stats.bootstrap import install_key_sql, replicate_weights
from analytics.stats.reweight import DIMENSIONS, Targets, effective_sample_size, rake
from core.store import Store
from schemas.sql import quote

UNIT_COLUMNS = {"click": "units", "impression": "impressions"}
"""Click mode (the paper's): a unit is a query that led to a click. Impression mode:
a unit is a shown result page (``serp_view``), for senders that report them."""
MAX_RANKS = 10
"""Positions c_1..c_10 are stored per install."""
ELEMENTS = ("organic", "ad", "shopping_box", "ssr", "other")
ELEMENT_COLUMNS = ("clicks_ad", "clicks_box", "clicks_ssr", "clicks_other")
"""The stored clicks of ``ELEMENTS`` after the first (organic clicks: the clicks array)."""
REPLICATES = 200
"""Bootstrap replicates (``figure3``'s default, the analyst views' ``range(200)``)."""
STUDY_AGE_CAP = 7
"""``arrangement_install`` keeps days since install up to 7 (7 = seven or more)."""


@dataclass(frozen=True)
class ReportQuery:
    experiment_id: str
    engine: str = "google"
    burn_in_days: int = 4
    identified_only: bool = True
    subset: str = "all"
    since: date | datetime | None = None
    until: date | datetime | None = None
    unit_mode: str = "click"
    slices: bool = False
    """Read the 10-second slices whatever the range (time windows: ``at_slice_resolution``)."""
    quintile_bounds: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    """An ``n_candidates`` quintile's boundaries as read once (``with_quintile_bounds``):
    the 0.2..0.8 quantiles over the units kept by preprocessing, then over all units (the
    drops). None: each statement computes them itself, inside it."""

    @property
    def _fine(self) -> bool:
        """Times of day were given: read the 10-second slices instead of whole days."""
        return self.slices or isinstance(self.since, datetime) or isinstance(self.until, datetime)

    @property
    def study_wide(self) -> bool:
        """The whole study with a burn-in the study-wide rows keep (at most 7 days) and a
        named subset: read ``agg_arrangement_install_subset``, one row per install, arm,
        age and identified for each subset, whose size grows with the installs, not with
        the events. Time ranges and quintiles read the per-day or 10-second rows."""
        return (
            not self.slices
            and self.since is None
            and self.until is None
            and 0 <= self.burn_in_days <= STUDY_AGE_CAP
            and self.subset in SUBSETS
        )

    @property
    def _source(self) -> str:
        if self.study_wide:
            return "agg_arrangement_install_subset FINAL"
        return "agg_arrangement_10s FINAL" if self._fine else "arrangement_install_day"

    def _time_conditions(self) -> list[str]:
        parts = []
        if not self._fine:  # whole days, both ends inclusive
            if self.since:
                parts.append(f"day >= {quote(self.since.isoformat())}")
            if self.until:
                parts.append(f"day <= {quote(self.until.isoformat())}")
            return parts
        if self.since:
            parts.append(f"slice_start >= toDateTime({quote(_text(self.since))}, 'UTC')")
        if self.until:  # exclusive, so consecutive windows never share a slice
            parts.append(f"slice_start < toDateTime({quote(_text(self.until))}, 'UTC')")
        return parts

    def _where(self, preprocessing: bool = True, subset: bool = True) -> str:
        parts = [
            f"experiment_id = {quote(self.experiment_id)}",
            f"engine = {quote(self.engine)}",
        ]
        if subset:
            parts.append(self._subset_condition(preprocessing))
        parts += self._time_conditions()
        if preprocessing:
            parts += self._preprocessing()
        return " AND ".join(parts)

    def _preprocessing(self) -> list[str]:
        """The burn-in and identification rules as conditions."""
        kept = [f"install_age_days >= {int(self.burn_in_days)}"]
        return [*kept, "identified = 1"] if self.identified_only else kept

    def _quintile(self) -> tuple[str, int] | None:
        """An ``n_candidates`` quintile subset's page condition and number (1..5), else None."""
        found = QUINTILE.fullmatch(self.subset)
        if not found:
            return None
        return (SUBSETS["no_ads_no_box"] if found.group(1) else "1"), int(found.group(2))

    def _subset_condition(self, preprocessing: bool) -> str:
        if self.study_wide:
            return f"subset = {quote(self.subset)}"
        if self.subset in SUBSETS:
            return SUBSETS[self.subset]
        quintile = self._quintile()
        if quintile is None:
            raise ValueError(f"unknown subset {self.subset!r}; choose from {subset_names()}")
        within, k = quintile
        if self.quintile_bounds is not None:
            kept, every = self.quintile_bounds
            literal = kept if preprocessing else every
            bounds = f"[{', '.join(str(int(b)) for b in literal)}]"
        else:
            # Boundaries from the units-weighted distribution of the bucketed "About N
            # results" figure in the same selection, so quintiles are at 0.1-decade resolution.
            bounds = (
                "(SELECT quantilesExactWeighted(0.2, 0.4, 0.6, 0.8)(n_candidates_bucket, units) "
                f"FROM {self._source} WHERE {self._where(preprocessing, subset=False)} "
                f"AND {within} AND n_candidates_bucket >= 0)"
            )
        lower = f"n_candidates_bucket > {bounds}[{k - 1}]" if k > 1 else "n_candidates_bucket >= 0"
        upper = f"n_candidates_bucket <= {bounds}[{k}]" if k < 5 else "1"
        return f"({within} AND {lower} AND {upper})"

    @property
    def quintile(self) -> int | None:
        """1..5 for an ``n_candidates`` quintile subset, else None."""
        quintile = self._quintile()
        return quintile[1] if quintile else None

    def quintile_bounds_sql(self) -> str:
        """Both sets of a quintile's boundaries in one pass over the selection: over the
        units preprocessing keeps (the report's) and over all units (its drops), as the
        inline subqueries of ``_subset_condition`` compute them."""
        quintile = self._quintile()
        if quintile is None:
            raise ValueError(f"{self.subset!r} is not an n_candidates quintile")
        within = quintile[0]
        quantiles = "quantilesExactWeighted{}(0.2, 0.4, 0.6, 0.8)(n_candidates_bucket, units{})"
        return (
            f"SELECT {quantiles.format('If', ', ' + ' AND '.join(self._preprocessing()))} AS kept, "
            f"{quantiles.format('', '')} AS every "
            f"FROM {self._source} WHERE {self._where(preprocessing=False, subset=False)} "
            f"AND {within} AND n_candidates_bucket >= 0"
        )

    def subset_bounds(self) -> dict[str, Any] | None:
        """A resolved quintile's range of ``n_candidates_bucket`` (floor of 10 x log10 of
        the "About N results" figure), for the report: exclusive below, inclusive above,
        None where the quintile is open."""
        k = self.quintile
        if k is None or self.quintile_bounds is None:
            return None
        kept = self.quintile_bounds[0]
        return {
            "column": "n_candidates_bucket",
            "above": int(kept[k - 2]) if k > 1 else None,
            "at_most": int(kept[k - 1]) if k < 5 else None,
        }

    @property
    def unit_column(self) -> str:
        """The column a unit is counted in (``UNIT_COLUMNS``); ValueError for another mode."""
        if self.unit_mode not in UNIT_COLUMNS:
            raise ValueError(f"unit mode must be one of {sorted(UNIT_COLUMNS)}")
        return UNIT_COLUMNS[self.unit_mode]

    def per_install_sql(self) -> str:
        """Units and clicks per (install, arm) after preprocessing."""
        unit = self.unit_column
        return (
            f"SELECT install_id, arm, sum({unit}) AS n_units, sumForEach(clicks) AS n_clicks "
            f"FROM {self._source} WHERE {self._where()} GROUP BY install_id, arm"
        )

    def per_install_keys_sql(self, seed: int, elements: bool = False) -> str:
        """``per_install_sql`` with each install as its bootstrap key under ``seed`` (computed
        by ClickHouse), for the columnar path (``Store.query_arrow``; ``report_arrays``
        reads it): the units and the clicks on c_1..c_10 as one array (the reader takes the
        ranks it needs). With ``elements``, also the clicks on ads, boxes, SSRs and other
        elements as e2..e5 (``ELEMENTS`` order; organic clicks, e1, are the sum of the
        array), so Figure 3 and the element shares come from one pass.

        The rows may repeat an (install key, arm): every reader sums them per install and
        arm (``figure3_arrays``' bincounts, ``report_arrays``' sort by key). So the
        study-wide rows, already about one per install and arm (937k rows for 700k pairs
        at 50M events), are read as they are, not grouped, and nothing is sorted in
        ClickHouse: at 50M events the statement took 1.55 s grouped and sorted, 0.95 s
        grouped, 0.48 s as rows (idle); numpy sorts the keys in ~0.1 s. The other sources
        (days, slices) hold many rows per pair and are grouped by the key (a UInt64, not
        the id string). The bootstrap knows an install only by its key, so two ids of one
        key (odds ~1e-10 at 100k installs) were one cluster already."""
        unit = self.unit_column
        key = f"{install_key_sql('install_id', seed)} AS install_key"
        counts = {"n_units": unit}
        if elements:
            counts |= {f"e{i}": column for i, column in enumerate(ELEMENT_COLUMNS, start=2)}
        if self.study_wide:
            columns = ["clicks AS n_clicks", *(f"toFloat64({c}) AS {n}" for n, c in counts.items())]
            return f"SELECT {key}, arm, {', '.join(columns)} FROM {self._source} WHERE {self._where()}"
        sums = (f"toFloat64(sum({c})) AS {n}" for n, c in counts.items())
        columns = ["sumForEach(clicks) AS n_clicks", *sums]
        return (
            f"SELECT {key}, arm, {', '.join(columns)} "
            f"FROM {self._source} WHERE {self._where()} GROUP BY install_key, arm"
        )

    def element_shares_sql(self) -> str:
        """Clicks per element type and arm after preprocessing (the hide arms' analysis)."""
        return (
            "SELECT arm, sum(arraySum(clicks)) AS organic, sum(clicks_ad) AS ad, "
            "sum(clicks_box) AS shopping_box, sum(clicks_ssr) AS ssr, sum(clicks_other) AS other "
            f"FROM {self._source} WHERE {self._where()} GROUP BY arm ORDER BY arm"
        )

    def drops_sql(self) -> str:
        """Units per arm (of the report's unit mode: clicks or shown pages) before
        preprocessing, dropped by burn-in, and dropped as unidentified; and the clicks kept,
        which the SRM check counts whatever the unit mode (``streams/detectors/srm.py``)."""
        unit = self.unit_column
        burn = int(self.burn_in_days)
        unidentified = "identified = 0" if self.identified_only else "0"
        return (
            f"SELECT arm, sum({unit}) AS all_units, "
            f"sumIf({unit}, install_age_days < {burn}) AS burn_in_dropped, "
            f"sumIf({unit}, install_age_days >= {burn} AND {unidentified}) AS unidentified_dropped, "
            f"sumIf(units, install_age_days >= {burn} AND NOT ({unidentified})) AS kept_clicks "
            f"FROM {self._source} WHERE {self._where(preprocessing=False)} "
            "GROUP BY arm ORDER BY arm"
        )

    def windows_sql(self, window_s: int) -> str:
        """Units and clicks per (window, install, arm) after preprocessing, windows of
        ``window_s`` seconds aligned to the epoch, read from the 10-second slices."""
        fine = self.at_slice_resolution()
        unit = self.unit_column
        return (
            "SELECT toUInt32(toStartOfInterval(slice_start, "
            f"INTERVAL {int(window_s)} SECOND)) AS window_start, install_id, arm, "
            f"sum({unit}) AS n_units, sumForEach(clicks) AS n_clicks "
            f"FROM agg_arrangement_10s FINAL WHERE {fine._where()} "
            "GROUP BY window_start, install_id, arm ORDER BY window_start"
        )

    def windows_keys_sql(self, window_s: int, seed: int, ranks: int = 10) -> str:
        """``windows_sql`` with installs as their bootstrap keys, for the columnar path."""
        fine = self.at_slice_resolution()
        unit = self.unit_column
        clicks = ", ".join(f"toFloat64(sum(clicks[{i}])) AS c{i}" for i in range(1, ranks + 1))
        return (
            "SELECT toUInt32(toStartOfInterval(slice_start, "
            f"INTERVAL {int(window_s)} SECOND)) AS window_start, "
            f"{install_key_sql('install_id', seed)} AS install_key, arm, "
            f"toFloat64(sum({unit})) AS n_units, {clicks} "
            f"FROM agg_arrangement_10s FINAL WHERE {fine._where()} "
            "GROUP BY window_start, install_id, arm ORDER BY window_start"
        )

    def window(self) -> tuple[str | None, str | None]:
        """The report's range as received_at bounds (inclusive, exclusive; None: open): whole
        days include their last day, time windows end where they say."""
        until = self.until
        if until is not None and not isinstance(until, datetime):
            until = until + timedelta(days=1)
        return (_text(self.since) if self.since else None, _text(until) if until else None)

    def at_slice_resolution(self) -> ReportQuery:
        """The same range with whole days turned into times (until stays inclusive of its day)."""

        def start(moment: date | datetime | None, days: int) -> datetime | None:
            if moment is None or isinstance(moment, datetime):
                return moment
            return datetime.combine(moment + timedelta(days=days), time())

        return replace(self, since=start(self.since, 0), until=start(self.until, 1), slices=True)


WINDOWS = {"1m": 60, "1h": 3600, "1d": 86400}
WINDOW = re.compile(r"([1-9][0-9]*)([smhd])")


def parse_window(text: str) -> int:
    """``1m``, ``1h``, ``1d`` or any ``<n>s|m|h|d`` that is a multiple of 10 seconds, in seconds."""
    match = WINDOW.fullmatch(text.strip())
    if not match:
        raise ValueError(f"window {text!r}: use 1m, 1h, 1d or <n>s/m/h/d")
    seconds = int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    if seconds % 10:
        raise ValueError(f"window {text!r}: must be a multiple of 10 seconds (the slice length)")
    if not 0 < seconds <= MAX_WINDOW_S:
        raise ValueError(f"window {text!r}: must be longer than 0 and at most 366d")
    return seconds


MAX_WINDOW_S = 366 * 86400
"""The longest timeline window (a whole study is ``report experiment``'s)."""


def _text(moment: date | datetime) -> str:
    if isinstance(moment, datetime):
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.strftime("%Y-%m-%d 00:00:00")


def default_preprocessing(registered: dict[str, Any] | None) -> tuple[int, str]:
    """The burn-in and unit mode a report of an experiment uses unless asked otherwise: as
    registered (its row of the ``experiments`` table), else the paper's (4 days, clicks).
    The board, ``report experiment`` and the stored decision looks all take these."""
    if registered is None:
        return ReportQuery.burn_in_days, ReportQuery.unit_mode
    return int(registered["burn_in_days"]), str(registered["unit_mode"] or ReportQuery.unit_mode)


def parse_moment(text: str) -> date | datetime:
    """``YYYY-MM-DD`` (a whole day) or ``YYYY-MM-DDTHH:MM[:SS]`` (UTC, 10-second resolution;
    a time with an offset, ``+05:00``, is that moment in UTC), within the years the slices'
    ``DateTime`` holds (ValueError otherwise)."""
    moment: date | datetime
    if "T" in text or " " in text:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is not None:
            try:
                moment = moment.astimezone(UTC).replace(tzinfo=None)
            except OverflowError:
                raise ValueError(f"{text!r} lies outside 1970-2105") from None
    else:
        moment = date.fromisoformat(text)
    if not 1970 <= moment.year <= 2105:
        raise ValueError(f"{text!r} lies outside 1970-2105")
    return moment


def table_from_rows(
    rows: list[dict[str, Any]], ranks: int, seed: int = 0, baseline: str = "control"
) -> list[ArmRow]:
    counts = [
        InstallArmCounts(r["install_id"], r["arm"], float(r["n_units"]), [float(c) for c in r["n_clicks"]])
        for r in rows
    ]
    return figure3(counts, ranks=ranks, seed=seed, baseline=baseline)


@cache
def record_keys(name: str, i: int) -> tuple[str, str, str]:
    """A flat record's keys for one estimate: value, low and high of ``name`` at c_i."""
    return f"{name}_c{i}", f"{name}_c{i}_ci_low", f"{name}_c{i}_ci_high"


def flatten(table: list[ArmRow]) -> list[dict[str, Any]]:
    """One flat record per arm, for JSON and CSV output (the keys and values of
    ``Estimate.to_json``, written straight in: a 720-window timeline has 400k of them)."""
    out = []
    for row in table:
        record: dict[str, Any] = {"arm": row.arm, "units": row.units, "installs": row.installs}
        for name, estimates in (("ctr", row.ctr), ("delta", row.delta), ("beta", row.beta)):
            for i, e in enumerate(estimates, start=1):
                value, low, high = record_keys(name, i)
                record[value] = json_number(e.value)
                record[low] = json_number(e.ci_low)
                record[high] = json_number(e.ci_high)
        out.append(record)
    return out


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


def pp_lower_bound(table: list[ArmRow]) -> float:
    """max over arms of |delta_1| (point estimates)."""
    return performative_power_lower_bound({r.arm: r.delta[0].value for r in table if r.delta})


BOX_BASELINE = "hide_ads_box"
"""Figure 5: in the pages with a shopping box, gaps are taken against the arm that hides it."""
BOX_RANKS = 3


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

    @property
    def performative_power_lower_bound(self) -> float:
        return pp_lower_bound(self.figure3)


def arrays_from_arrow(table: Any, ranks: int, prefix: str = "c", units: str = "n_units") -> PerInstallArrays:
    """The columns of ``windows_keys_sql`` (an Arrow table) as ``PerInstallArrays`` (clicks
    on c_1..c_ranks; positions the query lacks count zero). ``prefix`` and ``units`` pick
    another set of columns of the same shape."""
    import pyarrow.compute as pc

    arm = pc.dictionary_encode(table.column("arm")).combine_chunks()
    clicks = np.zeros((table.num_rows, ranks), order="F")  # filled, and read, column by column
    for i in range(ranks):
        if f"{prefix}{i + 1}" in table.column_names:
            clicks[:, i] = table.column(f"{prefix}{i + 1}").to_numpy()
    return PerInstallArrays(
        keys=table.column("install_key").to_numpy(),
        arm_codes=arm.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        arm_names=arm.dictionary.to_pylist(),
        units=table.column(units).to_numpy(),
        clicks=clicks,
    )


def report_arrays(
    table: Any, ranks: int, elements: bool = False
) -> tuple[PerInstallArrays, PerInstallArrays | None]:
    """The rows of ``per_install_keys_sql`` (an Arrow table) as ``PerInstallArrays``, sorted
    by install key (so ``sorted_unique`` finds the installs in one pass): clicks on
    c_1..c_ranks, and with ``elements`` the clicks per element type (``ELEMENTS`` order,
    their total as the units) as a second set."""
    import pyarrow.compute as pc

    keys = table.column("install_key").to_numpy()
    order: Any = slice(None)  # the statement sorts; rows from elsewhere may not come sorted
    if keys.size and not bool(np.all(keys[1:] >= keys[:-1])):
        order = np.argsort(keys, kind="stable")
    arm = pc.dictionary_encode(table.column("arm")).combine_chunks()
    codes = arm.indices.to_numpy(zero_copy_only=False).astype(np.int64)[order]
    names = arm.dictionary.to_pylist()
    lists = table.column("n_clicks").combine_chunks()
    width = len(lists[0]) if len(lists) else MAX_RANKS
    flat = lists.flatten().to_numpy(zero_copy_only=False)
    if flat.size != len(lists) * width:
        raise ValueError("per-install rows: clicks arrays of unequal length")
    stored = flat.reshape(len(lists), width)
    # one column at a time, gathered into key order and made float64 in one step, into a
    # column-major matrix (the bincounts read columns): a third of the cost of ordering the
    # rows and then transposing them (0.54 -> 0.19 s for 937k rows)
    clicks = np.zeros((keys.size, ranks), order="F")  # positions the rows lack count zero
    for j in range(min(ranks, width)):
        clicks[:, j] = stored[:, j][order]
    positions = PerInstallArrays(keys[order], codes, names, table.column("n_units").to_numpy()[order], clicks)
    if not elements:
        return positions, None
    by_type = np.zeros((keys.size, len(ELEMENTS)), order="F")
    by_type[:, 0] = stored.sum(axis=1)[order]
    for j in range(1, len(ELEMENTS)):
        by_type[:, j] = table.column(f"e{j + 1}").to_numpy()[order]
    return positions, PerInstallArrays(keys[order], codes, names, by_type.sum(axis=1), by_type)


def element_totals(arrays: PerInstallArrays) -> list[dict[str, Any]]:
    """Clicks per element type and arm (the columns of ``element_shares_sql``), summed from
    the per-install element columns."""
    n = len(arrays.arm_names)
    sums = np.stack(
        [
            np.bincount(arrays.arm_codes, weights=arrays.clicks[:, j], minlength=n)
            for j in range(len(ELEMENTS))
        ],
        axis=1,
    )
    present = np.unique(arrays.arm_codes)
    rows = [
        {"arm": arrays.arm_names[a], **{k: int(v) for k, v in zip(ELEMENTS, sums[a], strict=True)}}
        for a in present
    ]
    return sorted(rows, key=lambda r: r["arm"])


async def run_experiment_report(
    store: Store,
    query: ReportQuery,
    ranks: int,
    seed: int = 0,
    baseline: str = "control",
    intervals: str = "bootstrap",
    targets: Targets | None = None,
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
        per_install, drops, box_read = await asyncio.gather(
            store.query_arrow(query.per_install_keys_sql(seed, elements=True)),
            store.query(query.drops_sql(), read_only=True),
            asyncio.sleep(0) if own_box else store.query_arrow(box_query.per_install_keys_sql(seed)),
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
        return figure3_arrays(
            arrays, ranks, seed=seed, baseline=baseline, intervals=intervals, weight_of=weights
        )

    positions, elements = (
        report_arrays(per_install, ranks, elements=True) if per_install.num_rows else (None, None)
    )
    box_positions = report_arrays(box, BOX_RANKS)[0] if box.num_rows else None

    decisions = None
    if intervals == "sequential" and positions is not None:
        from analytics.reports.decisions import decision_days  # it reads queries of this module

        decisions = await decision_days(store, query, seed, baseline, totals=positions)
    return ExperimentReport(
        baseline=baseline,
        figure3=table(positions, ranks, baseline),
        box=table(box_positions, BOX_RANKS, BOX_BASELINE),
        shares=with_share_intervals(
            element_share_rows(element_totals(elements)) if elements is not None else [],
            table(elements, 5, baseline),
        ),
        drops=list(drops.dicts()),
        intervals=intervals,
        reweighting=reweighting,
        unweighted=table(positions, ranks, baseline, weighted=False) if targets else None,
        decisions=decisions,
        subset_bounds=query.subset_bounds(),
    )


async def with_quintile_bounds(store: Store, query: ReportQuery) -> ReportQuery:
    """A quintile query with its boundaries read once (both sets in one pass), so the
    report's statements filter on numbers instead of each computing them again (at 50M
    events a pass over the selection's slices: ~0.7 s each), and the report can say which
    range it counted. A live study's boundaries may move between this read and the next
    statement; the report then counts the range it states. Other queries: unchanged."""
    if query.quintile is None or query.quintile_bounds is not None:
        return query
    row = (await store.query(query.quintile_bounds_sql(), read_only=True)).rows[0]
    kept, every = (tuple(int(b) for b in bounds) for bounds in row)
    return replace(query, quintile_bounds=(kept, every))


def profiles_sql(experiment_id: str, seed: int) -> str:
    """Each install's questionnaire answers, keyed like the per-install rows."""
    columns = ", ".join(DIMENSIONS)
    return (
        f"SELECT {install_key_sql('install_id', seed)} AS install_key, consent, {columns} "
        f"FROM install_profiles WHERE experiment_id = {quote(experiment_id)}"
    )


@dataclass(frozen=True)
class KeyedWeights:
    """Install weights by install key, looked up for many rows at once (absent keys: 1)."""

    keys: np.ndarray
    weights: np.ndarray

    @classmethod
    def of(cls, keys: Any, weights: np.ndarray) -> KeyedWeights:
        """From parallel lists; a key given twice keeps its last weight (as a dict would)."""
        k = np.asarray(keys, dtype=np.uint64)
        last = k.size - 1 - np.unique(k[::-1], return_index=True)[1]  # sorted by key
        return cls(k[last], np.asarray(weights, dtype=float)[last])

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(self.keys, keys), max(self.keys.size - 1, 0))
        if not self.keys.size:
            return np.ones(len(keys))
        return np.where(self.keys[at] == keys, self.weights[at], 1.0)


async def install_weights(
    store: Store, experiment_id: str, seed: int, targets: Targets
) -> tuple[KeyedWeights, dict[str, Any]]:
    """Raked weights by install key (installs without answers: 1) and what the raking did."""
    profiles = (await store.query_arrow(profiles_sql(experiment_id, seed))).to_pydict()
    keys = profiles.get("install_key", [])
    answers = {d: np.asarray(profiles.get(d, []), dtype=object) for d in targets}
    weights = rake(answers, targets)
    raked = int((weights != 1).sum()) if len(weights) else 0
    summary = {
        "targets": targets,
        "installs_with_profile": len(keys),
        "installs_raked": raked,
        "effective_sample_size": round(effective_sample_size(weights), 1) if len(weights) else None,
        "max_weight": round(float(weights.max()), 3) if len(weights) else None,
        "without_answers": "weight 1: an install without a profile or an answer stands for itself",
    }
    return KeyedWeights.of(keys, weights), summary


def report_json(report: ExperimentReport) -> dict[str, Any]:
    """The report as ``report experiment --format json`` prints it."""
    import math

    pp = report.performative_power_lower_bound
    return {
        "baseline": report.baseline,
        "arms": flatten(report.figure3),
        "box_subset": {"baseline": BOX_BASELINE, "arms": flatten(report.box)},
        "element_shares": report.shares,
        "performative_power_lower_bound": None if math.isnan(pp) else round(pp, 6),
        "preprocessing": report.drops,
        "intervals": report.intervals,
        "interval_guarantee": INTERVAL_GUARANTEES[report.intervals],
        "decisions": report.decisions,
        "reweighting": report.reweighting,
        "unweighted_arms": flatten(report.unweighted) if report.unweighted is not None else None,
        "subset_bounds": report.subset_bounds,
        "markets": report.markets,
    }


INTERVAL_GUARANTEES = {
    "bootstrap": "95% clustered bootstrap: valid for one look at a fixed moment, not for watching",
    "sequential": (
        "95% confidence sequence: covers the truth at every moment of the study at once, so it "
        "may be watched and the study stopped when it excludes zero"
    ),
}
