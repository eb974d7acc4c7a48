"""``auditstream report autocomplete``: the RAI paper's tables through a running service."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import orjson
import typer
from rich.table import Table

from auditstream.cli.common import fail, result_console
from auditstream.cli.data import ApiKeyOpt, Format, Url, print_result, run_sql
from auditstream.cli.safe_text import json_safe, plain

TITLES = {
    "survival": "survival: suggestions by distinct days seen (RAI Fig. 6)",
    "nmi": "nmi per crawl round (shock = alert raised; RAI Fig. 7)",
    "social": "social media per engine: suggestions mentioning each platform ('any' = one or more; RAI §4.2)",
    "social_roots": "social media per root",
    "summary": "network structure per engine (RAI §4.1-4.2)",
    "depth": "nodes per depth before (full) and after (trimmed) trimming, per network (RAI Fig. 2)",
    "degrees": "out-degree of submitted queries and in-degree of suggestions (RAI Fig. 3)",
    "lengths": "words per query and change in words from query to suggestion (RAI Fig. 4)",
    "correlations": "Spearman rank correlations (RAI §4.1-4.3; at_depth empty = all depths)",
    "degree_correlation": "association networks: Spearman rho of n-gram degrees across engines (RAI §4.4)",
    "survival_length": "survival by query length: Kruskal-Wallis test per engine (RAI §4.3)",
    "survival_by_length": "days survived per word count of the suggestion (RAI §4.3)",
}


def autocomplete(
    study: Annotated[str, typer.Option(help="Crawl id prefix of the study ('' = every crawl)")] = "",
    engine: Annotated[str, typer.Option(help="Only this engine ('' = all)")] = "",
    root: Annotated[str, typer.Option(help="Only this root query ('' = all)")] = "",
    section: Annotated[
        str,
        typer.Option(
            help="Show one section: churn, survival, nmi, social (social, social_roots), structure "
            "(summary, depth, degrees, lengths, correlations) or compare (degree_correlation, "
            "survival_length, survival_by_length), or one of those tables; '' = all. "
            "--format csv needs one table (default churn)"
        ),
    ] = "",
    network: Annotated[
        str,
        typer.Option(
            help="trimmed (the paper's: each crawl's trimming rule applied first) or full (untrimmed)"
        ),
    ] = "trimmed",
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
    format: Format = "table",
) -> None:
    """The RAI paper's tables for a study, on the trimmed network unless --network full.

    Churn by rank x depth (Fig. 5), survival in days (Fig. 6), nmi per round
    with shocks (Fig. 7), social-media mentions per engine and root as a share
    of suggestions (§4.2), and with --section structure: nodes per depth
    before and after trimming (Fig. 2), in- and out-degree distributions and
    merge points (Fig. 3), the most suggestions per engine, query length and
    its change with depth (Fig. 4), and the Spearman correlations of
    §4.1-4.3 with p-values. Analysts find the same numbers in the views of
    schemas/clickhouse/README.md ("Autocomplete analytics");
    docs/reproducing.md maps each figure to its command.
    """
    from analytics.reports.autocomplete import AutocompleteQuery, computed, tables_of

    try:
        query = AutocompleteQuery(study, engine, root, network)  # type: ignore[arg-type]
        names = tables_of(section or ("churn" if format == "csv" else ""))
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if format == "csv" and len(names) != 1:
        raise fail(f"--format csv prints one table; pick one of {', '.join(names)}", 2)
    statements = query.statements()
    results = {name: computed(name, run_sql(url, api_key, statements[name])) for name in names}
    if not section and format != "csv" and not any(results[n]["rows"] for n in ("churn", "nmi", "survival")):
        raise fail("no completed autocomplete crawls match; is the study prefix right?", 1)
    if format == "csv":
        print_result(results[names[0]], "csv")
    elif format == "json":
        doc = {
            name: [dict(zip(r["columns"], row, strict=True)) for row in r["rows"]]
            for name, r in results.items()
        }
        sys.stdout.write(json_safe(orjson.dumps(doc).decode()) + "\n")
    else:
        _print_tables(results, network)


def _print_tables(results: dict[str, dict[str, Any]], network: str) -> None:
    for name, result in results.items():
        if name == "churn":
            _print_churn_grid(result, network)
        elif name == "nmi":
            shown = [c for c in result["columns"] if c != "shock_details"]
            rows = [[row[result["columns"].index(c)] for c in shown] for row in result["rows"]]
            print_result({"columns": shown, "rows": rows}, "table", title=f"{TITLES[name]} · {network}")
        else:
            print_result(result, "table", title=f"{TITLES[name]} · {network}")


def _print_churn_grid(result: dict[str, Any], network: str) -> None:
    """Mean churn as a depth x rank grid per engine, as in the paper's heatmap (Fig. 5)."""
    cols = result["columns"]
    cells: dict[str, dict[tuple[int, int], float]] = {}
    for row in result["rows"]:
        r = dict(zip(cols, row, strict=True))
        cells.setdefault(r["engine"], {})[(int(r["depth"]), int(r["rank"]))] = float(r["mean_churn"])
    console = result_console()
    for engine, grid in cells.items():
        ranks = sorted({rank for _, rank in grid})
        title = f"{engine}: mean churn by rank x depth (RAI Fig. 5) · {network}"
        table = Table("depth", *(f"r{rank}" for rank in ranks), title=plain(title))
        for depth in sorted({d for d, _ in grid}):
            table.add_row(
                str(depth), *(f"{grid[(depth, r)]:.2f}" if (depth, r) in grid else "-" for r in ranks)
            )
        console.print(table)
