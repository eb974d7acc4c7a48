"""The SQL behind the board: pure text builders over the documented analyst views.

The experiment panels reuse ``analytics.reports.experiment.ReportQuery`` (the same
statements as ``auditstream report experiment``), the autocomplete panels
``AutocompleteQuery`` and the personalization panel ``sections`` of the
personalization report, so the board shows the numbers the reports print.
"""

from __future__ import annotations

from analytics.reports.autocomplete import AutocompleteQuery
from analytics.reports.personalization import sections
from schemas.sql import quote
from studies.arrangement.read.report import report_statements
from studies.arrangement.selection import ReportQuery

ALERT_COLUMNS = (
    "toString(alert_id) AS alert_id, toString(created_at) AS created_at, kind, severity, subject, summary"
)

EXPERIMENT_ACTIVITY_SQL = (
    "SELECT experiment_id, arraySort(groupUniqArray(engine)) AS engines, sum(units) AS units, "
    "toString(toDate(max(hour_start))) AS last_day FROM agg_arrangement_replicates_1h FINAL "
    "GROUP BY experiment_id"
)
"""Experiments that have data, with their engines and raw click units: from the per-hour
rows (every age and identified, so every click unit), a row per hour and arm, not per
install (far less CPU per refresh of the list than the study-wide rows; bench/README.md,
"Figures behind the code"; they settle with the other roll-ups, a few seconds after a
batch)."""

REGISTRY_SQL = "SELECT experiment_id, status, engines FROM experiments"
"""Registered experiments (some may have no data yet)."""

AUTOCOMPLETE_CRAWLS_SQL = (
    "SELECT crawl_id, engine, count() AS roots, countIf(n_nodes > n_failed) AS fetched_roots, "
    "toString(max(completed_at)) AS completed_at FROM autocomplete_crawls GROUP BY crawl_id, engine"
)
"""Completed autocomplete crawls, to offer their studies (crawl id prefixes), with the roots
that fetched something (a crawl whose every request failed is no data to open the board on)."""

PERSONALIZATION_STUDIES_SQL = (
    "SELECT study_id, count() AS rounds, toString(max(round_started_at)) AS last_round "
    "FROM personalization_rounds GROUP BY study_id"
)


def registry_sql(experiment_id: str) -> str:
    """The registered allocation and preprocessing of one experiment (no row if unregistered)."""
    return (
        "SELECT status, arms, burn_in_days, unit_mode, config FROM experiments "
        f"WHERE experiment_id = {quote(experiment_id)}"
    )


def experiment_sql(query: ReportQuery) -> dict[str, str]:
    """Every statement of the experiment panels, by name: the report's and the SRM alerts."""
    return {
        **report_statements(query),
        "srm_alerts": (
            f"SELECT {ALERT_COLUMNS}, details FROM alerts FINAL WHERE kind = 'srm' "
            f"AND subject = {quote(query.experiment_id + '/' + query.engine)} ORDER BY created_at DESC"
        ),
    }


def autocomplete_sql(study: str, engine: str = "") -> dict[str, str]:
    """Churn by rank x depth and the nmi timeline (with shocks) of a crawl id prefix."""
    query = AutocompleteQuery(study, engine)
    return {"churn": query.churn_sql(), "nmi": query.nmi_sql()}


def personalization_sql(study_id: str) -> dict[str, str]:
    """Per-rank change against the noise floor, and round completeness."""
    statements = sections(study_id)
    return {"by_rank": statements["by_rank"], "rounds": statements["rounds"]}


def alerts_sql(limit: int) -> str:
    """The newest alerts first."""
    return f"SELECT {ALERT_COLUMNS} FROM alerts FINAL ORDER BY created_at DESC LIMIT {int(limit)}"
