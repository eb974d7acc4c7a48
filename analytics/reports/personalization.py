"""The personalization report: the paper's figures as tables, from the analyst views."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from analytics.stats.personalization import LINKS
from schemas.events import KNOWN_LAYOUT
from schemas.sql import quote

QUERY_COLUMNS = "query, query_category, treatment, pairs, round(personalization, 4) AS personalization"


def sections(
    study: str,
    top: int = 5,
    links: str = "primary",
    personalized: Sequence[str] = (),
    day: date | None = None,
) -> dict[str, str]:
    """SQL per report section, for one study; rounds compared on ``links`` (``primary``, the
    paper's list of every result's primary link, or ``organic``). ``personalized`` names the
    treatments of Figure 15's personalized line (none: those the noise test flags); ``day``
    is Figure 14's single day (None: the study's first full day)."""
    if links not in LINKS:
        raise ValueError(f"links must be one of {LINKS}")
    study_only = f"WHERE study_id = {quote(study)}"
    where = f"{study_only} AND links = {quote(links)}"
    return _paper_sections(study_only, where, top) | _figure_sections(where, personalized, day)


def _figure_sections(where: str, personalized: Sequence[str], day: date | None) -> dict[str, str]:
    """The sections that give Figures 12-15 as series to draw, one record per point."""
    flagged = _personalized_test(where, personalized)
    return {
        "treatment_groups": (
            # which treatments make Figure 15's personalized line, and the test behind it
            f"SELECT treatment, toUInt8({flagged}) AS personalized, results, changed_results, "
            "noise_results, noise_changed_results, round(z, 3) AS z "
            f"FROM personalization_treatment_groups {where} ORDER BY treatment"
        ),
        "by_rank_grouped": (
            # the paper's Figure 15: % of results changed at rank r, every test account against
            # its control, pooled over the personalized and the other treatments, beside the
            # control/twin noise floor; results = the results at rank r (the denominator)
            "SELECT series, rank, results, round(share, 4) AS changed FROM (SELECT multiIf(kind = 'noise', "
            f"'noise', {flagged}, 'personalized', 'non_personalized') AS series, r AS rank, "
            "count() AS results, avg(changed[r]) AS share "
            f"FROM personalization_pairs ARRAY JOIN arrayEnumerate(changed) AS r {where} "
            "GROUP BY series, r) ORDER BY series, rank"
        ),
        "category_cdf": (
            # the paper's Figure 14: per category, the CDF of Jaccard and edit distance of the
            # treatments against the control on one day
            "SELECT toString(d) AS day, query_category, metric, value, pairs, round(share, 4) AS cdf "
            "FROM (SELECT day AS d, query_category, metric, value, pairs, cdf AS share "
            f"FROM personalization_category_cdf {where} AND day IN {_figure14_day(where, day)}) "
            "ORDER BY query_category, metric, value"
        ),
        "consistency_days": (
            # the paper's Figure 12: one line per account, each day against its previous day
            "SELECT profile_id, role, treatment, toString(previous_day) AS previous_day, "
            "toString(day) AS day, queries, round(jaccard, 4) AS jaccard, "
            f"round(edit_distance, 2) AS edit_distance FROM personalization_consistency_days {where} "
            "ORDER BY profile_id, day"
        ),
        "consistency_category_days": (
            # the paper's Figure 13: the same per query category, over every account
            "SELECT query_category, toString(previous_day) AS previous_day, toString(day) AS day, "
            "count() AS pairs, round(avg(jaccard), 4) AS jaccard, "
            f"round(avg(edit_distance), 2) AS edit_distance FROM personalization_consistency {where} "
            "GROUP BY query_category, previous_day, day ORDER BY query_category, day"
        ),
    }


def _personalized_test(where: str, personalized: Sequence[str]) -> str:
    """SQL true for a treatment of Figure 15's personalized line: the named ones, else those
    whose share changed beats the noise floor (``personalization_treatment_groups``), as the
    paper put the experiments that showed personalization on that line."""
    if personalized:
        return f"treatment IN ({', '.join(quote(t) for t in personalized)})"
    return (
        f"treatment IN (SELECT treatment FROM personalization_treatment_groups {where} AND personalized = 1)"
    )


def _figure14_day(where: str, day: date | None) -> str:
    """The day of Figure 14 ("a single day of search results"): the one given, else the
    study's first full day, the earliest of the days with the most treatment pairs (the first
    and last days of a study are often cut short)."""
    if day is not None:
        return f"(toDate({quote(day.isoformat())}))"
    return (
        "(SELECT d FROM (SELECT toDate(round_started_at) AS d, count() AS n FROM personalization_pairs "
        f"{where} AND kind = 'treatment' GROUP BY d) ORDER BY n DESC, d ASC LIMIT 1)"
    )


def _paper_sections(study_only: str, where: str, top: int) -> dict[str, str]:
    """The tables of the paper's Figures 5-11 and 16, Table 2, and the study's health."""
    return {
        "overall": (
            "SELECT pairs, round(changed, 4) AS changed, round(changed_noise, 4) AS changed_noise, "
            "round(personalization, 4) AS personalization, round(rank1_moved, 4) AS rank1_moved, "
            f"round(rank1_moved_noise, 4) AS rank1_moved_noise FROM personalization_overall {where}"
        ),
        "by_treatment": (
            "SELECT treatment, pairs, round(jaccard, 3) AS jaccard, "
            "round(jaccard_noise, 3) AS jaccard_noise, round(edit_distance, 2) AS edit_distance, "
            "round(edit_distance_noise, 2) AS edit_distance_noise, round(changed, 4) AS changed, "
            "round(changed_noise, 4) AS changed_noise, round(personalization, 4) AS personalization "
            f"FROM personalization_by_treatment {where} ORDER BY treatment"
        ),
        "by_rank": (
            "SELECT treatment, rank, round(changed_treatment, 4) AS changed, "
            "round(changed_noise, 4) AS noise, round(personalization, 4) AS personalization "
            f"FROM personalization_by_rank {where} ORDER BY treatment, rank"
        ),
        "by_category": (
            "SELECT query_category, treatment, pairs, round(changed, 4) AS changed, "
            "round(changed_noise, 4) AS changed_noise, round(personalization, 4) AS personalization, "
            "round(rank1_moved, 4) AS rank1_moved "
            f"FROM personalization_by_category {where} ORDER BY query_category, treatment"
        ),
        "most_personalized": (
            f"SELECT {QUERY_COLUMNS} FROM personalization_by_query {where} "
            f"ORDER BY personalization DESC LIMIT {int(top)}"
        ),
        "least_personalized": (
            f"SELECT {QUERY_COLUMNS} FROM personalization_by_query {where} "
            f"ORDER BY personalization ASC LIMIT {int(top)}"
        ),
        "rounds": (
            "SELECT count() AS rounds, countIf(state = 'complete') AS complete, "
            "countIf(state = 'incomplete') AS incomplete, countIf(state = 'waiting') AS waiting, "
            "sum(late) AS late_snapshots, sum(profiles_failed) AS failed_fetches, "
            "round(median(skew_ms), 1) AS skew_ms_median, round(max(skew_ms), 1) AS skew_ms_max "
            f"FROM personalization_rounds {study_only}"
        ),
        "pages": (
            # pages whose layout the SERP rules did not know (coverage < KNOWN_LAYOUT): their
            # organic lists may be incomplete, so the comparison measures the parser there
            "SELECT count() AS snapshots, countIf(status = 'ok') AS parsed, "
            f"countIf(coverage < {KNOWN_LAYOUT}) AS unknown_layout, "
            "countIf(status = 'ok' AND coverage IS NULL) AS coverage_unrecorded "
            f"FROM serp_snapshots {study_only}"
        ),
        "rank1": (
            # the paper's Figure 16: of the pairs whose rank-1 result changed, where the new
            # one came from on the control's page and where the old one went (0: not on it)
            "SELECT treatment, direction, rank, pairs, "
            "round(pairs / sum(pairs) OVER (PARTITION BY treatment, direction), 4) AS share "
            f"FROM personalization_rank1 {where} AND kind = 'treatment' "
            "ORDER BY treatment, direction, rank"
        ),
        "consistency": (
            # the paper's Figures 12-13: each profile's page against its previous day's
            "SELECT query_category, role, count() AS day_pairs, round(avg(jaccard), 4) AS jaccard, "
            "round(avg(edit_distance), 2) AS edit_distance "
            f"FROM personalization_consistency {where} GROUP BY query_category, role "
            "ORDER BY query_category, role"
        ),
    }
