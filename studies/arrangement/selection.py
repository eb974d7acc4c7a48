"""A report's selection (experiment, engine, preprocessing, subset, time range, unit mode)
and the SQL it reads: what every reader of the per-install rows builds its statements from.

The sources are chosen by the selection: whole studies read the study-wide rows per
subset, whole days the per-day view, times of day the 10-second slices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from analytics.stats.arrangement_subsets import QUINTILE, SUBSETS, subset_names
from analytics.stats.bootstrap import install_key_sql
from schemas.sql import quote
from studies.arrangement.tables import AGE_CAP as STUDY_AGE_CAP
from studies.arrangement.tables import ELEMENT_COLUMNS, LATER_COLUMNS, UNIT_COLUMNS


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
    drops), or the plan's frozen cut points twice. None: each statement computes them
    itself, inside it."""
    quintiles_plan: tuple[int, str] | None = None
    """The plan version and hash that froze the quintile's boundaries (``quintile_bounds``
    are then theirs); None: they move with the selection."""
    quintiles_stored: bool = False
    """The worker keeps the frozen quintiles as named subsets (``studies/arrangement/
    quintiles.py``: their boundaries are ready), so a whole study reads the study-wide rows."""

    @property
    def fine(self) -> bool:
        """Times of day were given: read the 10-second slices instead of whole days."""
        return self.slices or isinstance(self.since, datetime) or isinstance(self.until, datetime)

    @property
    def study_wide(self) -> bool:
        """The whole study with a burn-in the study-wide rows keep (at most 7 days) and a
        named subset (a frozen quintile the worker keeps is one): read
        ``agg_arrangement_install_subset``, one row per install, arm, age and identified for
        each subset, whose size grows with the installs, not with the events. Time ranges
        and moving quintiles read the per-day or 10-second rows."""
        return (
            not self.slices
            and self.since is None
            and self.until is None
            and 0 <= self.burn_in_days <= STUDY_AGE_CAP
            and (self.subset in SUBSETS or (self.quintiles_stored and self.quintile is not None))
        )

    @property
    def _source(self) -> str:
        if self.study_wide:
            return "agg_arrangement_install_subset FINAL"
        return "agg_arrangement_10s FINAL" if self.fine else "arrangement_install_day"

    def _time_conditions(self) -> list[str]:
        parts = []
        if not self.fine:  # whole days, both ends inclusive
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
            parts.append(self.subset_condition(preprocessing))
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

    def subset_condition(self, preprocessing: bool) -> str:
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

    @property
    def quintile_prefix(self) -> str | None:
        """A quintile subset's family, as its name's prefix ('' or 'no_ads_no_box_'), else None."""
        found = QUINTILE.fullmatch(self.subset)
        return (found.group(1) or "") if found else None

    def quintile_bounds_sql(self) -> str:
        """Both sets of a quintile's boundaries in one pass over the selection: over the
        units preprocessing keeps (the report's) and over all units (its drops), as the
        inline subqueries of ``subset_condition`` compute them."""
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

    def quintile_pilot_sql(self) -> str:
        """The 0.2..0.8 quantiles of ``n_candidates_bucket`` over the units preprocessing
        keeps in the selection, within the quintile's family, and how many units they weigh:
        the cut points a pilot period gives (``plan freeze-quintiles``)."""
        quintile = self._quintile()
        if quintile is None:
            raise ValueError(f"{self.subset!r} is not an n_candidates quintile")
        return (
            "SELECT quantilesExactWeighted(0.2, 0.4, 0.6, 0.8)(n_candidates_bucket, units), sum(units) "
            f"FROM {self._source} WHERE {self._where(subset=False)} AND {quintile[0]} "
            "AND n_candidates_bucket >= 0"
        )

    def subset_bounds(self) -> dict[str, Any] | None:
        """A resolved quintile's range of ``n_candidates_bucket`` (floor of 10 x log10 of
        the "About N results" figure), for the report: exclusive below, inclusive above,
        None where the quintile is open; ``frozen`` when the plan fixed it, with the plan
        version and hash that did."""
        k = self.quintile
        if k is None or self.quintile_bounds is None:
            return None
        kept = self.quintile_bounds[0]
        plan = self.quintiles_plan
        return {
            "column": "n_candidates_bucket",
            "above": int(kept[k - 2]) if k > 1 else None,
            "at_most": int(kept[k - 1]) if k < 5 else None,
            "frozen": plan is not None,
            "plan_version": plan[0] if plan else None,
            "plan_sha256": plan[1] if plan else None,
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
        study-wide rows, already about one per install and arm, are read as they are, not
        grouped, and nothing is sorted in ClickHouse: the statement is cheaper as rows than
        grouped, or grouped and sorted, by more than numpy takes to sort the keys
        (bench/README.md, "Figures behind the code"). The other sources
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
        """Units per arm (of the report's unit mode: first-page clicks or shown first pages)
        before preprocessing, dropped by burn-in, and dropped as unidentified; the clicks
        kept, which the SRM check counts whatever the unit mode (``streams/detectors/srm.py``);
        and the later-page clicks (or shown later pages) the counting rule left out before
        them, which ``all_units`` does not hold."""
        unit = self.unit_column
        later = LATER_COLUMNS[self.unit_mode]
        burn = int(self.burn_in_days)
        unidentified = "identified = 0" if self.identified_only else "0"
        return (
            f"SELECT arm, sum({unit}) AS all_units, "
            f"sumIf({unit}, install_age_days < {burn}) AS burn_in_dropped, "
            f"sumIf({unit}, install_age_days >= {burn} AND {unidentified}) AS unidentified_dropped, "
            f"sumIf(units, install_age_days >= {burn} AND NOT ({unidentified})) AS kept_clicks, "
            f"sum({later}) AS later_page_dropped "
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
