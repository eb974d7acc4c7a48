"""The personalization report: the paper's figures as tables, from the analyst views."""

from __future__ import annotations

from analytics.stats.personalization import LINKS
from schemas.events import KNOWN_LAYOUT
from schemas.sql import quote

QUERY_COLUMNS = "query, query_category, treatment, pairs, round(personalization, 4) AS personalization"


def sections(study: str, top: int = 5, links: str = "primary") -> dict[str, str]:
    """SQL per report section, for one study; rounds compared on ``links`` (``primary``, the
    paper's list of every result's primary link, or ``organic``)."""
    if links not in LINKS:
        raise ValueError(f"links must be one of {LINKS}")
    study_only = f"WHERE study_id = {quote(study)}"
    where = f"{study_only} AND links = {quote(links)}"
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
