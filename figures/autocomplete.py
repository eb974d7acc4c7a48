"""Robertson et al. (WebSci 2019), "Auditing Autocomplete" (RAI): Figures 2-7 and 9 from
the ``report autocomplete`` tables (``sources.autocomplete``), on the trimmed network.

What each reads: Figure 2 ``depth`` (mean nodes per depth, full and trimmed); Figure 3
``degrees`` (mean P(k_out = k), P(k_in = k)) with ``summary``'s ``max_suggestions``;
Figure 4 ``lengths`` (words per query, change in words); Figure 5 ``churn`` (mean churn by
rank x depth); Figure 6 ``survival`` (share of suggestions by days seen); Figure 7 ``nmi``
(mean and lowest nmi per crawl round, shocks marked: the report has no per-root series);
Figure 9 the association networks' degrees (docs/reproducing.md's statement). The
``compare`` section goes into captions, not panels: Figure 6's says how survival differs
with suggestion length (``survival_length``'s test, ``survival_by_length``'s mean days per
word count), Figure 9's the engines' degree correlation (``degree_correlation``: rho, p, n).
"""

from __future__ import annotations

from typing import Any

from matplotlib.ticker import NullFormatter

from analytics.stats.autocomplete_compare import LENGTH_CAP
from figures import caption
from figures.bars import same_y
from figures.render import Figure, new_figure
from figures.tables import by, colour, empty, integer_x, section_figure

METHOD = "Trimmed networks (the paper's: emergent roots dropped); means over crawls and roots, no intervals"


def _n(answers: dict[str, Any]) -> str:
    summary = answers["summary"]["rows"]
    return (
        ", ".join(f"{r['engine']} {r['crawls']} crawls, {r['submitted_queries']} queries" for r in summary)
        or "0 crawls"
    )


def _num(value: Any, spec: str) -> str:
    """A statistic as the caption prints it; an undefined one (null) as such."""
    return "undefined" if value is None else format(value, spec)


def survival_note(answers: dict[str, Any]) -> str:
    """Figure 6's note from ``survival_length`` and ``survival_by_length`` (RAI §4.3: does
    survival differ with query length?)."""
    groups = by(answers["survival_by_length"], "engine")
    parts = []
    for test in answers["survival_length"]["rows"]:
        means = ", ".join(
            f"{g['words']}{'+' if g['words'] == LENGTH_CAP else ''}: {_num(g['mean_days'], '.1f')}"
            for g in groups.get(test["engine"], [])
        )
        parts.append(
            f"{test['engine']} H = {_num(test['statistic'], '.2f')}, p = {_num(test['p'], '.2g')} "
            f"({test['suggestions']} suggestions in {test['groups']} word counts; mean days by words "
            f"{means or 'none'})"
        )
    return f"Survival by suggestion length (Kruskal-Wallis across word counts, {LENGTH_CAP}+ pooled): " + (
        "; ".join(parts) or "no suggestions"
    )


def correlation_note(answers: dict[str, Any]) -> str:
    """Figure 9's note from ``degree_correlation`` (RAI §4.4: the engines' association
    networks, Spearman's rho of the n-grams' degrees over every n-gram either has)."""
    rows = [r for r in answers["degree_correlation"]["rows"] if r["over"] == "all"]
    parts = [
        f"{r['engine_a']}-{r['engine_b']} {r['degree']}-degree rho = {_num(r['rho'], '.2f')} "
        f"(p = {_num(r['p'], '.2g')}, n = {r['ngrams']} n-grams)"
        for r in rows
    ]
    return "Degree correlation across engines (Spearman, every n-gram either network has): " + (
        "; ".join(parts) or "one engine, nothing to correlate"
    )


def depth(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 2: mean nodes per depth before (left) and after (right) trimming, per engine."""
    fig = new_figure(6.4, 2.5)
    axes = fig.subplots(1, 2, sharey=True)
    section = answers["depth"]
    for ax, column, title in (
        (axes[0], "mean_nodes_full", "before trimming"),
        (axes[1], "mean_nodes_trimmed", "after trimming"),
    ):
        ax.set_title(title)
        if empty(ax, section, "no crawls"):
            continue
        for i, (engine, rows) in enumerate(by(section, "engine").items()):
            ax.plot(
                [r["depth"] for r in rows],
                [r[column] for r in rows],
                marker="o",
                color=colour(engine, i),
                label=engine,
            )
        integer_x(ax, [r["depth"] for r in section["rows"]])
        ax.set_xlabel("depth")
        ax.legend(frameon=False)
    axes[0].set_ylabel("mean nodes")
    columns = ["engine", "depth", "crawls", "mean_nodes_full", "mean_nodes_trimmed"]
    text = caption.plain(
        study,
        "Nodes per depth of each crawl's suggestion network, before and after trimming",
        _n(answers),
        "Means over crawls, no intervals",
    )
    return section_figure(
        "figure2_depth", "Figure 2: nodes per depth before and after trimming", text, fig, section, columns
    )


def degrees(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 3: mean P(k_out = k) (top) and P(k_in = k) (bottom); vertical lines at each
    engine's most suggestions."""
    fig = new_figure(4.4, 4.0)
    axes = fig.subplots(2, 1)
    section = answers["degrees"]
    most = {r["engine"]: r["max_suggestions"] for r in answers["summary"]["rows"]}
    for ax, degree in ((axes[0], "k_out"), (axes[1], "k_in")):
        chosen = {"rows": [r for r in section["rows"] if r["degree"] == degree]}
        if empty(ax, chosen, "no crawls"):
            continue
        for i, (engine, rows) in enumerate(by(chosen, "engine").items()):
            ax.plot(
                [r["k"] for r in rows],
                [r["mean_probability"] for r in rows],
                marker="o",
                color=colour(engine, i),
                label=engine,
            )
            if degree == "k_out" and engine in most:
                ax.axvline(most[engine], color=colour(engine, i), linewidth=0.8, linestyle=":")
        integer_x(ax, [r["k"] for r in chosen["rows"]])
        ax.set_xlabel(f"$k_{{{degree[2:]}}}$")
        ax.set_ylabel(f"P($k_{{{degree[2:]}}}$ = k)")
        ax.legend(frameon=False)
    columns = ["engine", "degree", "k", "nodes", "mean_probability"]
    text = caption.plain(
        study,
        "Degree distributions of the suggestion networks, mean over networks "
        "(dotted: the most suggestions an engine gave)",
        _n(answers),
        METHOD,
    )
    return section_figure(
        "figure3_degrees", "Figure 3: out- and in-degree distributions", text, fig, section, columns
    )


def lengths(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 4: words per query (top) and change in words from query to suggestion (bottom)."""
    fig = new_figure(4.4, 4.0)
    axes = fig.subplots(2, 1)
    section = answers["lengths"]
    for ax, measure, label in (
        (axes[0], "words", "words per query"),
        (axes[1], "change", "change in words (suggestion - query)"),
    ):
        chosen = {"rows": [r for r in section["rows"] if r["measure"] == measure]}
        if empty(ax, chosen, "no crawls"):
            continue
        engines = by(chosen, "engine")
        width = 0.8 / len(engines)
        for i, (engine, rows) in enumerate(engines.items()):
            xs = [r["value"] + (i - (len(engines) - 1) / 2) * width for r in rows]
            ax.bar(xs, [r["share"] for r in rows], width, color=colour(engine, i), label=engine)
        integer_x(ax, [r["value"] for r in chosen["rows"]])
        same_y(ax)
        ax.set_xlabel(label)
        ax.set_ylabel("share")
        ax.legend(frameon=False)
    columns = ["engine", "measure", "value", "n", "share"]
    text = caption.plain(study, "Whitespace-separated words of queries and suggestions", _n(answers), METHOD)
    return section_figure(
        "figure4_lengths", "Figure 4: query length and its change", text, fig, section, columns
    )


def churn(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 5: mean churn by rank x depth, one heatmap per engine."""
    section = answers["churn"]
    engines = by(section, "engine") or {"": []}
    fig = new_figure(3.2 * len(engines) + 0.6, 2.8)
    axes = fig.subplots(1, len(engines), squeeze=False)[0]
    for ax, (engine, rows) in zip(axes, engines.items(), strict=True):
        if empty(ax, {"rows": rows}, "no consecutive crawls"):
            continue
        depths, ranks = sorted({r["depth"] for r in rows}), sorted({r["rank"] for r in rows})
        grid = [[float("nan")] * len(ranks) for _ in depths]
        for r in rows:
            grid[depths.index(r["depth"])][ranks.index(r["rank"])] = r["mean_churn"]
        image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="lower")
        ax.set_xticks(range(len(ranks)), [str(k) for k in ranks])
        ax.set_yticks(range(len(depths)), [str(d) for d in depths])
        ax.set_xlabel("rank")
        ax.set_ylabel("depth")
        ax.set_title(engine)
        fig.colorbar(image, ax=ax, label="mean churn")
    columns = ["engine", "depth", "rank", "mean_churn", "pairs"]
    text = caption.plain(
        study, "Churn of suggestions between consecutive crawls of a root (Eq. 1-2)", _n(answers), METHOD
    )
    return section_figure(
        "figure5_churn", "Figure 5: mean churn by rank and depth", text, fig, section, columns
    )


def survival(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 6: share of suggestions by the number of distinct days they were seen."""
    fig = new_figure(4.4, 2.6)
    ax = fig.subplots()
    section = answers["survival"]
    if not empty(ax, section, "no crawls"):
        engines = by(section, "engine")
        width = 0.8 / len(engines)
        for i, (engine, rows) in enumerate(engines.items()):
            xs = [r["days"] + (i - (len(engines) - 1) / 2) * width for r in rows]
            ax.bar(xs, [r["share"] for r in rows], width, color=colour(engine, i), label=engine)
        integer_x(ax, [r["days"] for r in section["rows"]])
        same_y(ax)
        ax.set_xlabel("days seen (last: that many or more)")
        ax.set_ylabel("share of suggestions")
        ax.legend(frameon=False)
    columns = ["engine", "days", "suggestions", "share"]
    text = caption.plain(
        study,
        f"Suggestions (root, suggestion) by distinct UTC days seen. {survival_note(answers)}",
        _n(answers),
        METHOD,
    )
    return section_figure(
        "figure6_survival", "Figure 6: survival of suggestions", text, fig, section, columns
    )


def nmi(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 7: nmi over crawl rounds per engine (mean over roots, the lowest root dashed),
    rounds with a shock alert marked."""
    section = answers["nmi"]
    engines = by(section, "engine") or {"": []}
    fig = new_figure(6.4, 1.6 * len(engines) + 0.8)
    axes = fig.subplots(len(engines), 1, squeeze=False, sharex=True)[:, 0]
    for ax, (engine, rows) in zip(axes, engines.items(), strict=True):
        if empty(ax, {"rows": rows}, "no crawl rounds"):
            continue
        xs = list(range(len(rows)))
        ax.plot(
            xs,
            [r["mean_nmi"] for r in rows],
            marker=".",
            color=colour(engine),
            label=f"{engine}: mean over roots",
        )
        ax.plot(
            xs,
            [r["min_nmi"] for r in rows],
            linestyle="--",
            color=colour(engine),
            alpha=0.6,
            label="lowest root",
        )
        for x, r in zip(xs, rows, strict=True):
            if r["shock"]:
                ax.axvline(x, color="red", linewidth=0.8)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("nmi")
        ax.legend(frameon=False, loc="lower left")
    axes[-1].set_xlabel("crawl round (red: shock alert)")
    columns = ["engine", "crawl_id", "completed_at", "roots", "mean_nmi", "min_nmi", "shock"]
    text = caption.plain(
        study,
        "nmi of each root's information against its previous crawl (docs/method.md: 1 - I(W;T)/H(T))",
        _n(answers),
        METHOD,
    )
    return section_figure(
        "figure7_nmi", "Figure 7: information stability (nmi) over time", text, fig, section, columns
    )


def associations(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 9: in- and out-degree distributions of the aggregated association networks."""
    fig = new_figure(6.4, 2.6)
    axes = fig.subplots(1, 2, sharey=True)
    section = answers["associations"]
    for ax, degree in ((axes[0], "k_in"), (axes[1], "k_out")):
        chosen = {"rows": [r for r in section["rows"] if r["degree"] == degree]}
        if empty(ax, chosen, "no association edges"):
            continue
        for i, (engine, rows) in enumerate(by(chosen, "engine").items()):
            ax.loglog(
                [r["k"] for r in rows],
                [r["ngrams"] for r in rows],
                marker="o",
                linestyle="",
                color=colour(engine, i),
                label=engine,
            )
        ax.xaxis.set_minor_formatter(NullFormatter())  # 3x10^0, 4x10^0 ... overlapped
        ax.set_xlabel(f"$k_{{{degree[2:]}}}$")
        ax.legend(frameon=False)
    axes[0].set_ylabel("n-grams")
    columns = ["engine", "degree", "k", "ngrams"]
    text = caption.plain(
        study,
        "Association networks of reduced n-grams aggregated over roots "
        f"(view autocomplete_associations, via POST /v1/sql). {correlation_note(answers)}",
        _n(answers),
        "Counts of n-grams per degree, no intervals",
    )
    return section_figure(
        "figure9_associations", "Figure 9: degrees of the association networks", text, fig, section, columns
    )


FIGURES = {
    "figure2_depth": depth,
    "figure3_degrees": degrees,
    "figure4_lengths": lengths,
    "figure5_churn": churn,
    "figure6_survival": survival,
    "figure7_nmi": nmi,
    "figure9_associations": associations,
}
"""Each figure's file name and the function that draws it."""


def draw(study: str, answers: dict[str, Any]) -> list[Figure]:
    """Every RAI figure from ``sources.gather(sources.autocomplete(prefix), ...)``."""
    return [f(study, answers) for f in FIGURES.values()]
