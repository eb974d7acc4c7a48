"""The autocomplete report: churn by rank x depth (RAI Figure 5), survival (Figure 6) and
the nmi timeline with shocks (Figure 7), from the analyst views."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.sql import quote

SURVIVAL_CAP = 30
"""Suggestions that lived longer than this many days share the last bucket."""


@dataclass(frozen=True)
class AutocompleteQuery:
    study: str = ""  # crawl_id prefix; "" = every crawl
    engine: str = ""  # "" = every engine
    root: str = ""  # "" = every root

    def _where(self, alias: str = "") -> str:
        """The selection; ``alias`` qualifies the columns (``"c."``) in a join."""
        parts = ["1"]
        if self.study:
            parts.append(f"startsWith({alias}crawl_id, {quote(self.study)})")
        if self.engine:
            parts.append(f"{alias}engine = {quote(self.engine)}")
        if self.root:
            parts.append(f"{alias}root = {quote(self.root)}")
        return " AND ".join(parts)

    def churn_sql(self) -> str:
        """Mean churn per (engine, rank, depth) over roots and consecutive crawl pairs."""
        return (
            "SELECT engine, rank, depth, round(avg(churn), 4) AS mean_churn, count() AS pairs "
            f"FROM autocomplete_churn WHERE {self._where()} "
            "GROUP BY engine, rank, depth ORDER BY engine, depth, rank"
        )

    def survival_sql(self) -> str:
        """How many suggestions lived 1, 2, ... distinct days (the last bucket is open)."""
        return (
            f"SELECT engine, least(days, {SURVIVAL_CAP}) AS days, count() AS suggestions, "
            "round(count() / sum(count()) OVER (PARTITION BY engine), 4) AS share "
            "FROM (SELECT engine, root, target, uniqExact(toDate(completed_at)) AS days "
            f"FROM autocomplete_edges WHERE {self._where()} GROUP BY engine, root, target) "
            "GROUP BY engine, days ORDER BY engine, days"
        )

    def nmi_sql(self) -> str:
        """Per crawl round: roots, mean and lowest nmi, and the shock alert if one was raised."""
        return (
            "SELECT c.engine AS engine, c.crawl_id AS crawl_id, "
            "toString(min(c.completed_at)) AS completed_at, count() AS roots, "
            "round(avg(c.nmi), 4) AS mean_nmi, round(min(c.nmi), 4) AS min_nmi, "
            "any(a.subject) != '' AS shock, any(a.details) AS shock_details "
            "FROM autocomplete_crawls AS c "
            "LEFT JOIN (SELECT subject, details FROM alerts WHERE kind = 'autocomplete_shock') AS a "
            "ON a.subject = concat(c.engine, '/', c.crawl_id) "
            f"WHERE {self._where('c.')} "
            "AND c.nmi IS NOT NULL "
            "GROUP BY c.engine, c.crawl_id ORDER BY engine, completed_at"
        )
