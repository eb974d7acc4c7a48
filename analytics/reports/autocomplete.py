"""The autocomplete report: churn by rank x depth (RAI Figure 5), survival (Figure 6), the nmi
timeline with shocks (Figure 7), social-media mentions (§4.2) and network structure (Figures
2-4 and the rank correlations of §4.1-4.3), from the analyst views.

Every statistic is read on the trimmed network by default, as the paper computes them
(``network="full"`` for the untrimmed one); the Figure-2 table shows both side by side.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Literal

from analytics.stats.autocomplete import words
from analytics.stats.autocomplete_compare import (
    degree_correlation,
    degrees,
    length_group,
    survival_by_length,
)
from analytics.stats.autocomplete_structure import spearman_p
from schemas.sql import quote

SURVIVAL_CAP = 30
"""Suggestions that lived longer than this many days share the last bucket."""

Network = Literal["trimmed", "full"]

SECTIONS: dict[str, tuple[str, ...]] = {
    "churn": ("churn",),
    "survival": ("survival",),
    "nmi": ("nmi",),
    "social": ("social", "social_roots"),
    "structure": ("summary", "depth", "degrees", "lengths", "correlations"),
    "compare": ("degree_correlation", "survival_length", "survival_by_length"),
}
"""Report sections and the tables each shows, in order."""


@dataclass(frozen=True)
class AutocompleteQuery:
    study: str = ""  # crawl_id prefix; "" = every crawl
    engine: str = ""  # "" = every engine
    root: str = ""  # "" = every root
    network: Network = "trimmed"

    def __post_init__(self) -> None:
        if self.network not in ("trimmed", "full"):
            raise ValueError(f"network must be 'trimmed' or 'full', not {self.network!r}")

    @property
    def _suffix(self) -> str:
        """The views of the trimmed network have no suffix, their twins on the full one `_full`."""
        return "" if self.network == "trimmed" else "_full"

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

    def _edges_where(self) -> str:
        """The selection on `autocomplete_edges`: its `kept` edges are the trimmed network."""
        return self._where() + (" AND kept = 1" if self.network == "trimmed" else "")

    def _params(self, network: str | None = None) -> str:
        """Arguments of the parameterised structure views."""
        return (
            f"network = {quote(network or self.network)}, study = {quote(self.study)}, "
            f"engine = {quote(self.engine)}, root = {quote(self.root)}"
        )

    def churn_sql(self) -> str:
        """Mean churn per (engine, rank, depth) over roots and consecutive crawl pairs."""
        return (
            "SELECT engine, rank, depth, round(avg(churn), 4) AS mean_churn, count() AS pairs "
            f"FROM autocomplete_churn{self._suffix} WHERE {self._where()} "
            "GROUP BY engine, rank, depth ORDER BY engine, depth, rank"
        )

    def survival_sql(self) -> str:
        """How many suggestions lived 1, 2, ... distinct days (the last bucket is open)."""
        return (
            f"SELECT engine, least(days, {SURVIVAL_CAP}) AS days, count() AS suggestions, "
            "round(count() / sum(count()) OVER (PARTITION BY engine), 4) AS share "
            "FROM (SELECT engine, root, target, uniqExact(toDate(completed_at)) AS days "
            f"FROM autocomplete_edges WHERE {self._edges_where()} GROUP BY engine, root, target) "
            "GROUP BY engine, days ORDER BY engine, days"
        )

    def nmi_sql(self) -> str:
        """Per crawl round: roots, mean and lowest nmi (RAI's Equation 3), the mean of the
        earlier pooled reading beside it, and the shock alert if one was raised (shocks are
        judged on the trimmed network's nmi). An alert stored twice (the worker and an
        import's recompute judging one round at once) still joins each crawl once."""
        return (
            "SELECT c.engine AS engine, c.crawl_id AS crawl_id, "
            "toString(min(c.completed_at)) AS completed_at, count() AS roots, "
            "round(avg(c.nmi), 4) AS mean_nmi, round(min(c.nmi), 4) AS min_nmi, "
            "round(avg(c.nmi_pooled), 4) AS mean_nmi_pooled, "
            "any(a.subject) != '' AS shock, any(a.details) AS shock_details "
            f"FROM autocomplete_crawls{self._suffix} AS c "
            "LEFT JOIN (SELECT subject, any(details) AS details FROM alerts "
            "WHERE kind = 'autocomplete_shock' GROUP BY subject) AS a "
            "ON a.subject = concat(c.engine, '/', c.crawl_id) "
            f"WHERE {self._where('c.')} "
            "AND c.nmi IS NOT NULL "
            "GROUP BY c.engine, c.crawl_id ORDER BY engine, completed_at"
        )

    def social_sql(self) -> str:
        """Per engine and platform ('any' = at least one): suggestions mentioning it, their share
        of all suggestions, and how many roots had one. A suggestion is a distinct
        (root, crawl, suggestion); matching is `platforms_mentioned` (whole words)."""
        where = self._edges_where()
        return (
            "SELECT engine, platform, mentions, suggestions, mentions / suggestions AS share, "
            "roots, of_roots FROM "
            "(SELECT engine, platform, uniqExact(root, crawl_id, target) AS mentions, "
            "uniqExact(root) AS roots FROM autocomplete_edges "
            "ARRAY JOIN arrayConcat(if(empty(platforms), [], ['any']), platforms) AS platform "
            f"WHERE {where} GROUP BY engine, platform) AS m "
            "INNER JOIN (SELECT engine, uniqExact(root, crawl_id, target) AS suggestions, "
            f"uniqExact(root) AS of_roots FROM autocomplete_edges WHERE {where} GROUP BY engine) AS s "
            "USING (engine) ORDER BY engine, platform != 'any', platform"
        )

    def social_roots_sql(self) -> str:
        """Per engine, root and platform ('any' included): mentions and their share of the root's
        suggestions."""
        where = self._edges_where()
        return (
            "SELECT engine, root, platform, mentions, suggestions, mentions / suggestions AS share FROM "
            "(SELECT engine, root, platform, uniqExact(crawl_id, target) AS mentions FROM autocomplete_edges "
            "ARRAY JOIN arrayConcat(if(empty(platforms), [], ['any']), platforms) AS platform "
            f"WHERE {where} GROUP BY engine, root, platform) AS m "
            "INNER JOIN (SELECT engine, root, uniqExact(crawl_id, target) AS suggestions "
            f"FROM autocomplete_edges WHERE {where} GROUP BY engine, root) AS s "
            "USING (engine, root) ORDER BY engine, root, platform != 'any', platform"
        )

    def depth_sql(self) -> str:
        """Figure 2, nodes per depth before and after trimming, beside the selected network's
        merge points, query length and out-degree per depth."""
        full = f"autocomplete_nodes_by_depth({self._params('full')})"
        trimmed = f"autocomplete_nodes_by_depth({self._params('trimmed')})"
        chosen = f"autocomplete_nodes_by_depth({self._params()})"
        return (
            "SELECT engine, depth, f.crawls AS crawls, f.nodes AS nodes_full, "
            "f.mean_nodes AS mean_nodes_full, "
            "t.nodes AS nodes_trimmed, t.mean_nodes AS mean_nodes_trimmed, s.merge_points AS merge_points, "
            "s.mean_merge_points AS mean_merge_points, s.mean_words AS mean_words, s.queries AS queries, "
            f"s.mean_k_out AS mean_k_out FROM {full} AS f "
            f"FULL OUTER JOIN {trimmed} AS t USING (engine, depth) "
            f"LEFT JOIN {chosen} AS s USING (engine, depth) ORDER BY engine, depth"
        )

    def structure_sql(self) -> dict[str, str]:
        """The structure section's tables: summary, depth, degrees, lengths, correlations."""
        params = self._params()
        return {
            "summary": f"SELECT * FROM autocomplete_structure_summary({params}) ORDER BY engine",
            "depth": self.depth_sql(),
            "degrees": f"SELECT * FROM autocomplete_degree_distribution({params}) ORDER BY engine, degree, k",
            "lengths": f"SELECT * FROM autocomplete_query_lengths({params}) ORDER BY engine, measure, value",
            "correlations": (
                f"SELECT * FROM autocomplete_correlations({params}) "
                "ORDER BY engine, x, y, at_depth IS NOT NULL, at_depth"
            ),
        }

    def links_sql(self) -> str:
        """The association networks' distinct links per engine over the selected crawls
        (every engine: the correlation compares them), for `degree_table`."""
        where = f"network = {quote(self.network)}"
        if self.study:
            where += f" AND startsWith(crawl_id, {quote(self.study)})"
        if self.root:
            where += f" AND root = {quote(self.root)}"
        return (
            "SELECT DISTINCT engine, source_reduced AS source, target_reduced AS target "
            f"FROM autocomplete_association_links WHERE {where} ORDER BY engine, source, target"
        )

    def survivals_sql(self) -> str:
        """Days survived per suggestion (engine, root, suggestion), for `survival_length_table`."""
        return (
            "SELECT engine, root, target AS suggestion, uniqExact(toDate(completed_at)) AS days "
            f"FROM autocomplete_edges WHERE {self._edges_where()} "
            "GROUP BY engine, root, suggestion ORDER BY engine, root, suggestion"
        )

    def statements(self) -> dict[str, str]:
        """Every table of the report by name (see SECTIONS); those of COMPUTED are raw rows
        that `computed` turns into the table."""
        return {
            "churn": self.churn_sql(),
            "survival": self.survival_sql(),
            "nmi": self.nmi_sql(),
            "social": self.social_sql(),
            "social_roots": self.social_roots_sql(),
            **self.structure_sql(),
            "degree_correlation": self.links_sql(),
            "survival_length": self.survivals_sql(),
            "survival_by_length": self.survivals_sql(),
        }


def tables_of(section: str) -> tuple[str, ...]:
    """The tables a ``--section`` names: a section of SECTIONS or one table; "" = every one."""
    if not section:
        return tuple(t for tables in SECTIONS.values() for t in tables)
    if section in SECTIONS:
        return SECTIONS[section]
    if any(section in tables for tables in SECTIONS.values()):
        return (section,)
    names = sorted(set(SECTIONS) | {t for tables in SECTIONS.values() for t in tables})
    raise ValueError(f"unknown section {section!r}; choose one of {', '.join(names)}")


def with_p_values(result: dict[str, Any]) -> dict[str, Any]:
    """The correlations table (a /v1/sql answer) with each rho's two-sided p-value added."""
    columns = list(result["columns"])
    rho, n = columns.index("rho"), columns.index("n")
    rows = []
    for row in result["rows"]:
        value = row[rho]
        p = spearman_p(float("nan") if value is None else float(value), int(row[n]))
        rows.append([*row, None if p != p else p])
    return {**result, "columns": [*columns, "p"], "rows": rows}


def _records(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(zip(result["columns"], row, strict=True)) for row in result["rows"]]


def _table(columns: list[str], rows: list[list[Any]]) -> dict[str, Any]:
    """A /v1/sql-shaped answer; NaN (an undefined statistic) becomes null."""
    clean = [[None if isinstance(v, float) and v != v else v for v in row] for row in rows]
    return {"columns": columns, "rows": clean}


def degree_table(result: dict[str, Any]) -> dict[str, Any]:
    """RAI §4.4: per pair of engines and degree (in, out), Spearman's rho of the n-grams'
    degrees in the two engines' association networks, over every n-gram either has (the
    paper's "all of the n-grams we observed", `over` = all) and over those both have."""
    edges: dict[str, list[tuple[str, str]]] = {}
    for r in _records(result):
        edges.setdefault(r["engine"], []).append((r["source"], r["target"]))
    engines = sorted(edges)
    rows = []
    for i, a in enumerate(engines):
        for b in engines[i + 1 :]:
            for degree in ("in", "out"):
                da, db = degrees(edges[a], degree), degrees(edges[b], degree)
                for over in ("all", "both"):
                    c = degree_correlation(da, db, over)
                    rows.append([a, b, degree, over, c.n, c.rho, c.p])
    return _table(["engine_a", "engine_b", "degree", "over", "ngrams", "rho", "p"], rows)


def _survivals(result: dict[str, Any]) -> dict[str, list[tuple[int, int]]]:
    """(words, days) per suggestion, per engine; words as everywhere (whitespace words)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for r in _records(result):
        out.setdefault(r["engine"], []).append((len(words(r["suggestion"])), int(r["days"])))
    return out


def survival_length_table(result: dict[str, Any]) -> dict[str, Any]:
    """RAI §4.3: per engine, the Kruskal-Wallis test of days survived across word counts."""
    rows = []
    for engine, pairs in sorted(_survivals(result).items()):
        t = survival_by_length(pairs)
        rows.append([engine, "kruskal_wallis", t.groups, t.n, t.statistic, t.p])
    return _table(["engine", "test", "groups", "suggestions", "statistic", "p"], rows)


def survival_by_length_table(result: dict[str, Any]) -> dict[str, Any]:
    """Per engine and word count (the last group pooled), suggestions and their mean and
    median days survived: the groups the test compares."""
    rows = []
    for engine, pairs in sorted(_survivals(result).items()):
        groups: dict[int, list[int]] = {}
        for n_words, lived in pairs:
            groups.setdefault(length_group(n_words), []).append(lived)
        for group, days in sorted(groups.items()):
            rows.append([engine, group, len(days), statistics.fmean(days), statistics.median(days)])
    return _table(["engine", "words", "suggestions", "mean_days", "median_days"], rows)


COMPUTED = {
    "correlations": with_p_values,
    "degree_correlation": degree_table,
    "survival_length": survival_length_table,
    "survival_by_length": survival_by_length_table,
}
"""Tables finished in Python from their SQL's rows."""


def computed(name: str, result: dict[str, Any]) -> dict[str, Any]:
    """The table ``name`` from its SQL answer (most tables are the answer itself)."""
    return COMPUTED[name](result) if name in COMPUTED else result
