"""``auditstream report``: tables for operators and analysts, through a running service."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from rich.table import Table

from auditstream.cli import report_autocomplete
from auditstream.cli.common import fail, result_console
from auditstream.cli.data import ApiKeyOpt, Format, Url, call_api, print_result, run_sql
from auditstream.cli.report_family import print_corrections, print_reduced
from auditstream.cli.safe_text import json_safe, markup_safe, plain

if TYPE_CHECKING:
    from studies.arrangement.selection import ReportQuery

app = typer.Typer(
    help="Reports: the minute aggregate (default), an experiment's Figure-3 table, its timeline, "
    "page composition (pages), personalization and autocomplete studies, performative power "
    "composition.",
    invoke_without_command=True,
)

SUMMARY_SQL = """
SELECT experiment_id, engine, arm, original_rank, u AS units, c AS clicks,
       round(if(u = 0, nan, c / u), 4) AS ctr
FROM
(
    SELECT experiment_id, engine, arm, original_rank, sum(units) AS u, sum(clicks) AS c
    FROM clicks_by_rank_1m
    WHERE window_start >= now() - INTERVAL {minutes} MINUTE {where}
    GROUP BY experiment_id, engine, arm, original_rank
)
ORDER BY experiment_id, engine, arm, original_rank
"""


Since = Annotated[
    str | None, typer.Option(help="First day YYYY-MM-DD, or a UTC time YYYY-MM-DDTHH:MM (inclusive)")
]
Until = Annotated[
    str | None,
    typer.Option(help="Last day YYYY-MM-DD (inclusive), or a UTC time YYYY-MM-DDTHH:MM (exclusive)"),
]
Subset = Annotated[
    str,
    typer.Option(
        help="all, ads_or_box, no_ads_no_box, box, ssr_c1_c2, ads_no_box, no_ssr_c1_c2, ads, "
        "n_candidates_q1..q5 (quintiles of 'About N results'), no_ads_no_box_n_candidates_q1..q5 "
        "(the quintiles within pages without ads or a box: the paper's Figure 6, right)"
    ),
]
BurnIn = Annotated[
    int | None,
    typer.Option(
        help="Drop each install's first N days \\[default: as the experiment was registered, else 4]",
        show_default=False,
    ),
]
UnitMode = Annotated[
    str | None,
    typer.Option(
        help="click (the paper's units) or impression (serp_view) "
        "\\[default: as the experiment was registered, else click]",
        show_default=False,
    ),
]
Seed = Annotated[int, typer.Option(help="Bootstrap seed (200 replicates)")]
ReportFormat = Annotated[
    str,
    typer.Option(
        "--format",
        help="table, json or csv. csv is long: one row per table, market, arm, quantity and "
        "rank (value, ci_low, ci_high, planted), every table of the JSON (CTR, delta, beta, box "
        "subset, unweighted, element shares, preprocessing, markets, decisions, warnings)",
    ),
]
"""``report experiment --format``: its CSV is the long table of ``studies/arrangement/long_form.py``."""


def as_dicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of a /v1/sql answer as dicts."""
    return [dict(zip(result["columns"], r, strict=True)) for r in result["rows"]]


def emit_json(doc: Any) -> None:
    sys.stdout.write(json_safe(orjson.dumps(doc).decode()) + "\n")


@app.callback()
def summary(
    ctx: typer.Context,
    experiment: Annotated[str | None, typer.Option(help="Only this experiment id")] = None,
    minutes: Annotated[int, typer.Option(help="Look back this many minutes")] = 60 * 24 * 365,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
    format: Format = "table",
) -> None:
    """Units, clicks and CTR per experiment, engine, arm and original rank (raw, no preprocessing)."""
    if ctx.invoked_subcommand is not None:
        return
    from schemas.sql import quote

    where = f"AND experiment_id = {quote(experiment)}" if experiment else ""
    result = run_sql(url, api_key, SUMMARY_SQL.format(minutes=int(minutes), where=where))
    print_result(result, format, title="clicks by original rank (units = click events)")


def _fmt(
    value: float | None, ci: tuple[float | None, float | None] | None = None, planted: float | None = None
) -> str:
    """An estimate as a table cell: "—" where it is undefined (no units, or no baseline
    units), without brackets where it has no interval (too few units), and the planted
    value after it in a simulated study."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    text = f"{value:.3f}"
    if ci and ci[0] is not None and ci[1] is not None:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    if planted is not None:
        text += f" (planted {planted:.3f})"
    return text


Baseline = Annotated[
    str,
    typer.Option(help="Arm the gaps are taken against (Figure 5: --subset box --baseline hide_ads_box)"),
]
Intervals = Annotated[
    str,
    typer.Option(
        help="bootstrap: CI for one look at a fixed moment; sequential: confidence sequence, valid "
        "at every look (watch and stop), with the day each arm's delta c1 first excluded zero"
    ),
]
Level = Annotated[float, typer.Option(help="Confidence level of the intervals", min=0.51, max=0.999)]
Correction = Annotated[
    str,
    typer.Option(
        help="Multiple-comparison correction over the family (the plan's, else delta of every arm "
        "at every shown rank): holm, bh (Benjamini-Hochberg), bonferroni or none"
    ),
]
Reweight = Annotated[
    Path | None,
    typer.Option(
        help="Target population margins (CSV dimension,bin,share; docs/reweighting.md): "
        "weighted estimates by raking, beside the panel's own"
    ),
]
Reduce = Annotated[
    bool,
    typer.Option(
        "--variance-reduction",
        help="Also variance-reduced gaps and distortions beside the plain ones (docs/variance-reduction.md)",
    ),
]
ByMarket = Annotated[
    bool, typer.Option("--by-market", help="Also identification and SRM per engine market (raw events)")
]
Unidentified = Annotated[bool, typer.Option("--include-unidentified", help="Keep identified=false events")]
Ranks = Annotated[int, typer.Option(help="Positions c1..cN to show")]


@app.command()
def experiment(
    ctx: typer.Context,
    experiment_id: Annotated[str, typer.Argument(help="The experiment id")],
    engine: Annotated[str, typer.Option(help="Search engine")] = "google",
    subset: Subset = "all",
    burn_in_days: BurnIn = None,
    include_unidentified: Unidentified = False,
    since: Since = None,
    until: Until = None,
    ranks: Ranks = 6,
    unit_mode: UnitMode = None,
    seed: Seed = 0,
    baseline: Baseline = "control",
    intervals: Intervals = "bootstrap",
    level: Level = 0.95,
    correction: Correction = "none",
    reweight: Reweight = None,
    variance_reduction: Reduce = False,
    by_market: ByMarket = False,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
    format: ReportFormat = "table",
) -> None:
    """CTR per position and arm, gap and distortion against control, with intervals
    (clustered bootstrap, or confidence sequences with --intervals sequential).

    Computed by the service (POST /v1/reports/experiment). With an analysis plan (``auditstream
    plan``), options left unset are the plan's, and an option set against it is a departure:
    shown under the tables and logged (``plan deviations``). Intervals are cut to their range
    (CTR [0, 1], delta [-1, 1], beta <= 1), arms under 10 units or 2 installs have none;
    warnings follow the tables, planted values (simulations) follow the estimates."""
    _report_query(experiment_id, engine, burn_in_days, True, subset, since, until, unit_mode)  # exits 2
    if intervals not in ("bootstrap", "sequential"):
        raise fail("--intervals must be bootstrap or sequential", 2)
    if correction not in ("holm", "bh", "bonferroni", "none"):
        raise fail("--correction must be holm, bh, bonferroni or none", 2)
    body = _given_options(ctx, locals())
    if reweight:
        body["targets"] = _targets(reweight)
    doc = call_api(url, api_key, "POST", "/v1/reports/experiment", body)
    if format == "json":
        emit_json(doc)
    elif format == "csv":
        from studies.arrangement.long_form import COLUMNS, long_rows

        print_result({"columns": COLUMNS, "rows": long_rows(doc)}, "csv")
    else:
        units = f"burn-in {doc['burn_in_days']} days · units {doc['unit_mode']}"
        where = f"{doc.get('engine', engine)} · subset {doc.get('subset', subset)}"
        _print_experiment(doc, f"{experiment_id} · {where} · {units}", ranks)


def _given_options(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
    """The request's options the user set (not left at their defaults), and the experiment:
    what the user did not set is the service's to fill, from the analysis plan if any."""

    def given(name: str) -> bool:
        source = ctx.get_parameter_source(name)  # typer's own click: compared by name
        return source is not None and source.name != "DEFAULT"

    return {name: values[name] for name in REPORT_OPTIONS if name == "experiment_id" or given(name)}


def _report_query(
    experiment_id: str,
    engine: str,
    burn_in_days: int | None,
    identified_only: bool,
    subset: str,
    since: str | None,
    until: str | None,
    unit_mode: str | None,
) -> ReportQuery:
    """The report's selection from the command's options; a bad option exits 2 (unset
    preprocessing is checked at its defaults: the service reads the registered values)."""
    from studies.arrangement.selection import ReportQuery, parse_moment

    try:
        return ReportQuery(
            experiment_id,
            engine,
            ReportQuery.burn_in_days if burn_in_days is None else burn_in_days,
            identified_only,
            subset,
            parse_moment(since) if since else None,
            parse_moment(until) if until else None,
            unit_mode or ReportQuery.unit_mode,
        )
    except ValueError as exc:
        raise fail(str(exc), 2) from None


REPORT_OPTIONS = (
    "experiment_id", "engine", "subset", "burn_in_days", "include_unidentified", "since", "until",
    "ranks", "unit_mode", "seed", "baseline", "intervals", "level", "correction", "variance_reduction",
    "by_market",
)  # fmt: skip
"""The options of ``report experiment`` that POST /v1/reports/experiment takes as they are."""


def _targets(path: Path) -> list[dict[str, Any]]:
    """The margins of a target file, checked here so a bad file exits 2 with its line."""
    from analytics.stats.reweight import TargetError, read_targets

    try:
        targets = read_targets(path.read_text())
    except (OSError, TargetError) as exc:
        raise fail(f"{path}: {exc}", 2) from None
    return [
        {"dimension": d, "bin": b, "share": s} for d, shares in targets.items() for b, s in shares.items()
    ]


def _print_reweighting(doc: dict[str, Any], ranks: int) -> None:
    weighting = doc.get("reweighting")
    if not weighting:
        return
    console = result_console()
    shown = {name: markup_safe(value) for name, value in weighting.items()}
    console.print(
        f"reweighted to the target margins: {shown['installs_raked']} of "
        f"{shown['installs_with_profile']} profiled installs raked, effective sample size "
        f"{shown['effective_sample_size']}, largest weight {shown['max_weight']} "
        "(installs without answers keep weight 1); unweighted CTR:"
    )
    for row in doc["unweighted_arms"] or []:
        ctrs = " ".join(_cell(row, f"ctr_c{i}") for i in range(1, ranks + 1))
        console.print(f"  {markup_safe(row['arm'])}: {markup_safe(ctrs)}")


def _cell(record: dict[str, Any], name: str, planted: dict[tuple[str, str, int], float] | None = None) -> str:
    """``name`` (e.g. ``ctr_c1``) of a flattened report record with its interval, and its
    planted value when ``planted`` has one for the record's arm."""
    quantity, _, rank = name.rpartition("_c")
    truth = (planted or {}).get((record["arm"], quantity, int(rank)))
    return _fmt(record.get(name), (record.get(f"{name}_ci_low"), record.get(f"{name}_ci_high")), truth)


def _bucket_range(bounds: dict[str, Any]) -> str:
    """A quintile's bucket range in words: bucket b holds "About N results" with
    floor(10 log10 N) = b, so the range (lo, hi] is N from 10^((lo+1)/10) up to 10^((hi+1)/10)."""
    lo, hi, column = bounds.get("above"), bounds.get("at_most"), bounds["column"]
    low = f"{lo} < {column}" if lo is not None else f"0 <= {column}"
    buckets = f"{low} <= {hi}" if hi is not None else low
    low_n = f"{10 ** ((lo + 1) / 10):,.0f}" if lo is not None else "1"
    high_n = f"to under {10 ** ((hi + 1) / 10):,.0f}" if hi is not None else "and more"
    return f"{buckets} (About N results: from {low_n} {high_n})"


def _print_markets(markets: list[dict[str, Any]]) -> None:
    market_columns = ["market", "events", "identified", "kept clicks", "SRM p"]
    market_rows = [
        [
            m["market"] or "(unknown)",
            m["events"],
            "" if m["identified_share"] is None else f"{m['identified_share']:.1%}",
            sum(m["units_by_arm"].values()),
            _srm_p(m),
        ]
        for m in markets
    ]
    print_result(
        {"columns": market_columns, "rows": market_rows},
        "table",
        title="by engine market: identification and sample ratio",
    )


def _srm_p(market: dict[str, Any]) -> str:
    if market["srm_p_value"] is None:
        return ""
    return f"{market['srm_p_value']:.4g}" + (" mismatch" if market["srm_mismatch"] else "")


def _print_notes(doc: dict[str, Any]) -> None:
    """What follows the Figure-3 tables: the intervals' guarantee, the decision line
    (sequential intervals: the day each arm's delta c1 first excluded zero), the quintile's
    range and the report's warnings."""
    console = result_console()
    console.print(f"intervals: {markup_safe(doc['interval_guarantee'])}")
    for arm, day in (doc.get("decisions") or {}).items():
        when = f"first on {day}" if day else "not yet"
        console.print(f"decision, {markup_safe(arm)}: delta c1 excluded zero {markup_safe(when)}")
    if bounds := doc.get("subset_bounds"):
        console.print(f"quintile: {markup_safe(_bucket_range(bounds))}")
    for w in doc.get("warnings") or []:
        console.print(f"warning ({markup_safe(w['code'])}): {markup_safe(w['message'])}")
    if plan := doc.get("plan"):
        console.print(markup_safe(plan_line(plan)))


def plan_line(plan: dict[str, Any]) -> str:
    """The analysis plan a report followed, and each setting asked for against it."""
    head = f"analysis plan v{plan['version']} (sha256 {plan['sha256'][:12]})"
    if plan["followed"]:
        return f"{head}: followed"
    asked = "; ".join(
        f"{name} {d['asked']!r} (planned {d['planned']!r})" for name, d in sorted(plan["departures"].items())
    )
    logged = f", logged at {plan['logged_at']} UTC" if plan.get("logged_at") else ""
    return f"{head}: DEPARTS from it: {asked}{logged}"


INTERVAL_NAMES = {"bootstrap": "95% CI", "sequential": "95% confidence sequence"}


def _print_experiment(doc: dict[str, Any], title: str, ranks: int) -> None:
    from studies.arrangement.read.planted import planted_lookup

    console = result_console()
    planted = planted_lookup(doc.get("planted"))
    level = f"{doc.get('level', 0.95):.1%}".replace(".0%", "%")
    shown = INTERVAL_NAMES.get(doc.get("intervals", ""), "95% CI").replace("95%", level)
    ctr_table = Table(
        "arm",
        "units",
        "installs",
        *(f"CTR c{i}" for i in range(1, ranks + 1)),
        title=plain(f"{title}: CTR with {shown}"),
    )
    gaps = min(3, ranks)  # the first three positions (fewer with --ranks below 3)
    gap_table = Table(
        "arm",
        *(f"delta c{i}" for i in range(1, gaps + 1)),
        *(f"beta c{i}" for i in range(1, gaps + 1)),
        title=plain(f"performativity gap and algorithmic distortion against {doc['baseline']}, {shown}"),
    )
    for row in doc["arms"]:
        ctr_table.add_row(
            plain(row["arm"]),
            plain(row["units"]),
            plain(row["installs"]),
            *(plain(_cell(row, f"ctr_c{i}", planted)) for i in range(1, ranks + 1)),
        )
        if "delta_c1" in row:
            gap_table.add_row(
                plain(row["arm"]), *(plain(_cell(row, f"delta_c{i}", planted)) for i in range(1, gaps + 1)),
                *(plain(_cell(row, f"beta_c{i}", planted)) for i in range(1, gaps + 1)),
            )  # fmt: skip
    console.print(ctr_table)
    console.print(gap_table)
    print_corrections(doc.get("corrections"))
    print_reduced(doc.get("variance_reduction"))
    _print_notes(doc)
    _print_reweighting(doc, ranks)
    columns = ["arm", "organic", "ad", "shopping_box", "ssr", "other"]
    shares = doc["element_shares"]
    print_result(
        {"columns": columns, "rows": [[s[c] for c in columns] for s in shares]},
        "table",
        title="share of clicks by element type",
    )
    drops = doc["preprocessing"]
    drop_columns = list(drops[0]) if drops else []
    print_result(
        {"columns": drop_columns, "rows": [[d[c] for c in drop_columns] for d in drops]},
        "table",
        title="preprocessing: units kept and dropped",
    )
    if doc.get("markets") is not None:
        _print_markets(doc["markets"])


@app.command()
def timeline(
    experiment_id: Annotated[str, typer.Argument(help="The experiment id")],
    window: Annotated[str, typer.Option(help="Window length: 1m, 1h, 1d (or <n>s/m/h/d)")] = "1h",
    rank: Annotated[int, typer.Option(help="Position whose CTR and gap are shown in the table")] = 1,
    engine: Annotated[str, typer.Option(help="Search engine")] = "google",
    subset: Annotated[str, typer.Option(help="Same subsets as `report experiment`")] = "all",
    burn_in_days: BurnIn = None,
    since: Since = None,
    until: Until = None,
    unit_mode: UnitMode = None,
    seed: Seed = 0,
    baseline: Annotated[str, typer.Option(help="Arm the gaps are taken against")] = "control",
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
    format: Format = "table",
) -> None:
    """CTR, gap and distortion per arm in consecutive windows, each with its own 95% CI.

    JSON and CSV carry every position c1..c10; the table shows --rank.
    """
    from studies.arrangement.selection import parse_window

    _report_query(experiment_id, engine, burn_in_days, True, subset, since, until, unit_mode)  # exits 2
    try:
        window_s = parse_window(window)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if not 1 <= rank <= 10:
        raise fail("--rank must be between 1 and 10", 2)
    body = {
        "experiment_id": experiment_id,
        "window": window,
        "engine": engine,
        "subset": subset,
        "burn_in_days": burn_in_days,
        "since": since,
        "until": until,
        "unit_mode": unit_mode,
        "seed": seed,
        "baseline": baseline,
    }
    doc = call_api(url, api_key, "POST", "/v1/reports/timeline", body)
    if format == "json":
        emit_json(doc)
    elif format == "csv":
        records = [{"window_start": w["window_start"], **r} for w in doc["windows"] for r in w["arms"]]
        from studies.arrangement.answers import flat_columns
        from studies.arrangement.tables import MAX_RANKS

        columns = ["window_start", *flat_columns(MAX_RANKS)]
        print_result({"columns": columns, "rows": [[r.get(c) for c in columns] for r in records]}, "csv")
    else:
        units = f"burn-in {doc['burn_in_days']} days · units {doc['unit_mode']}"
        windows = f"{window} windows ({window_s} s)"
        title = f"{experiment_id} · {engine} · subset {subset} · {units} · {windows}, 95% CI"
        _print_timeline(doc, rank, title)


def _print_timeline(doc: dict[str, Any], rank: int, title: str) -> None:
    headers = ("window start (UTC)", "arm", "units", f"CTR c{rank}", f"delta c{rank}", f"beta c{rank}")
    out = Table(*headers, title=plain(title))
    for window in doc["windows"]:
        for row in window["arms"]:
            cells = [_cell(row, f"ctr_c{rank}")]
            for name in ("delta", "beta"):
                cells.append(_cell(row, f"{name}_c{rank}") if f"{name}_c{rank}" in row else "-")
            out.add_row(*map(plain, (window["window_start"], row["arm"], row["units"], *cells)))
    result_console().print(out)


app.command(name="autocomplete")(report_autocomplete.autocomplete)


PERSONALIZATION_TITLES = {
    "overall": "overall: every treatment against the control, and the noise floor",
    "by_category": "per query category",
    "by_treatment": "per treatment value, against the control (noise = control vs its twin)",
    "by_rank": "share of results changed per rank: treatment vs noise floor",
    "most_personalized": "most personalized queries",
    "least_personalized": "least personalized queries",
    "rounds": "rounds: completeness and lock-step skew",
    "pages": "result pages: parsed, and with a layout the SERP rules do not know",
    "rank1": "rank 1 changed: where the new one came from, where the old one went (0: off the page)",
    "consistency": "day to day: each profile's page against its previous day's, per category",
    "treatment_groups": "Figure 15's groups: personalized treatments, the test against noise",
    "by_rank_grouped": "% of results changed per rank: personalized, others, noise (Figure 15)",
    "category_cdf": "per category, CDF of Jaccard and edit distance on one day (Figure 14)",
    "consistency_days": "day to day per profile, each day pair (Figure 12)",
    "consistency_category_days": "day to day per query category, each day pair (Figure 13)",
}
"""The table titles of ``report personalization``, one per section."""


@app.command()
def personalization(
    study: Annotated[str, typer.Option(help="The study id")],
    top: Annotated[int, typer.Option(help="Queries in the most/least personalized lists")] = 5,
    section: Annotated[
        str,
        typer.Option(
            help="With --format csv: overall, by_treatment, by_category, by_rank (Figure 5), "
            "by_rank_grouped (Figure 15) with treatment_groups, category_cdf (Figure 14), "
            "most_personalized, least_personalized, rank1 (Figure 16), consistency, "
            "consistency_days (Figure 12), consistency_category_days (Figure 13), rounds or pages"
        ),
    ] = "by_treatment",
    personalized: Annotated[
        list[str] | None,
        typer.Option(
            help="A treatment of Figure 15's personalized line (repeat the option); by default "
            "those whose share changed beats the noise floor (one-sided z test, 5%)"
        ),
    ] = None,
    day: Annotated[
        str | None,
        typer.Option(help="Figure 14's single day, YYYY-MM-DD (default: the study's first full day)"),
    ] = None,
    links: Annotated[
        str,
        typer.Option(
            help="primary: every result's primary link, static labels such as related searches "
            "included (the paper's); organic: the organic results only (rounds compared before "
            "migration 0024 have organic rows only, until the study is replayed)"
        ),
    ] = "primary",
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
    format: Format = "table",
) -> None:
    """Jaccard and edit distance per treatment with the noise bars, % changed per rank vs noise,
    most/least personalized queries, round completeness with lock-step skew, and how many
    pages had a layout the SERP rules do not know (their results may be incomplete)."""
    from datetime import date

    from analytics.reports.personalization import sections

    try:
        on_day = date.fromisoformat(day) if day else None
        statements = sections(study, top, links, personalized or (), on_day)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    results = _run_sections(statements, section, url, api_key, format)
    if results is None:
        return
    if not results["by_treatment"]["rows"]:
        raise fail(f"no compared rounds for study {study!r}", 1)
    if format == "json":
        emit_json({name: as_dicts(r) for name, r in results.items()})
        return
    for name, result in results.items():
        print_result(result, "table", title=PERSONALIZATION_TITLES[name])


def _run_sections(
    statements: dict[str, str], section: str, url: str, api_key: str | None, format: str
) -> dict[str, dict[str, Any]] | None:
    """A report of several tables: CSV prints the one ``section`` (None is returned),
    JSON and table need them all."""
    if format == "csv":
        if section not in statements:
            raise fail(f"--section must be one of {sorted(statements)}", 2)
        print_result(run_sql(url, api_key, statements[section]), "csv")
        return None
    return {name: run_sql(url, api_key, sql) for name, sql in statements.items()}


@app.command()
def pages(
    experiment_id: Annotated[str, typer.Argument(help="The experiment id")],
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
    format: Format = "table",
) -> None:
    """The paper's Figure 8: how first result pages were composed, per engine, for pages shown
    (serp_view) and pages that led to a click: the share with ads on top, with a shopping box,
    with any specialized result (SSR) and with an SSR at position 2 (view page_composition)."""
    from schemas.sql import quote

    result = run_sql(
        url,
        api_key,
        "SELECT engine, pages_of, pages, round(share_with_ads, 4) AS share_with_ads, "
        "round(share_with_box, 4) AS share_with_box, round(share_with_ssr, 4) AS share_with_ssr, "
        "round(share_with_ssr_at_2, 4) AS share_with_ssr_at_2 FROM page_composition "
        f"WHERE experiment_id = {quote(experiment_id)} ORDER BY engine, pages_of",
    )
    if not result["rows"]:
        raise fail(f"no result pages for experiment {experiment_id!r}", 1)
    if format == "json":
        emit_json(as_dicts(result))
        return
    print_result(result, format, title=f"page composition of {experiment_id} (Figure 8)")


@app.command()
def composition(
    search_share: Annotated[float, typer.Option(help="Share of a site's traffic that comes from search")],
    topk_share: Annotated[float, typer.Option(help="Share of that traffic from the top-k positions")],
    beta: Annotated[float, typer.Option(help="Algorithmic distortion (from `report experiment`)")],
    format: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> None:
    """The paper's §6 composition: search share x top-k share x beta.

    Printed as a labelled line (a bare number said nothing of what it was); --format json
    gives the inputs and the unrounded value as one object.
    """
    from analytics.stats.arrangement import composition as compose

    if format not in ("text", "json"):
        raise fail(f"unknown format {format!r}; use text or json", 2)
    try:
        value = compose(search_share, topk_share, beta)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if format == "json":
        doc = {"search_share": search_share, "topk_share": topk_share, "beta": beta, "composition": value}
        typer.echo(orjson.dumps(doc).decode())
        return
    inputs = f"search share {search_share:g} x top-k share {topk_share:g} x beta {beta:g}"
    typer.echo(f"composition {value:.4f} ({inputs})")
