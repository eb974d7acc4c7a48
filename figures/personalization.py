"""Hannak et al. (WWW 2013), "Measuring Personalization of Web Search": the figures the
``report personalization`` sections support, drawn from them (``sources.personalization``).

What each reads: Figure 5 ``by_rank`` (% changed per rank, each treatment against the
control/twin noise); Figures 6-11 ``by_treatment`` (Jaccard and edit distance per treatment
beside the noise); Figure 12 ``consistency_days`` (day-to-day Jaccard and edit distance over
day pairs, one line per account); Figure 13 ``consistency_category_days`` (the same, one
line per query category); Figure 14 ``category_cdf`` (per category, the CDFs of Jaccard and
edit distance against the control on the paper's single day, named in the caption); Figure
15 ``by_rank_grouped`` (% changed per rank, personalized and non-personalized treatments
pooled, beside the noise; ``treatment_groups`` names each line's treatments in the caption);
Figure 16 ``rank1`` (where the new rank-1 result came from and where the old one went).
Figure 4 and the AMT parts need real users' searches (docs/reproducing.md); there is
nothing to draw them from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from matplotlib.figure import Figure as MplFigure

from figures import caption
from figures.bars import grouped, same_y
from figures.render import BLUE, GREY, ORANGE, Figure, new_figure
from figures.tables import by, colour, empty, integer_x, section_figure

METHOD = (
    "Rounds compared on every result's primary link (links = primary); means over the compared "
    "pairs, no intervals (the report gives none); noise = the control against its twin"
)


def _n(answers: dict[str, Any]) -> str:
    overall = answers["overall"]["rows"]
    return f"{overall[0]['pairs']} treatment/control pairs" if overall else "0 pairs"


def by_rank(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 5: % of results changed at each rank, per treatment, against the noise."""
    fig = new_figure(4.2, 2.8)
    ax = fig.subplots()
    section = answers["by_rank"]
    if not empty(ax, section, "no compared rounds"):
        for i, (treatment, rows) in enumerate(by(section, "treatment").items()):
            ranks = [r["rank"] for r in rows]
            ax.plot(
                ranks,
                [100 * r["changed"] for r in rows],
                marker="o",
                markersize=3,
                color=colour(treatment, i),
                label=treatment,
            )
        # the noise floor is the control against its twin: one line, whatever the treatment
        first = next(iter(by(section, "treatment").values()))
        noise = [100 * r["noise"] for r in first]
        ax.plot(
            [r["rank"] for r in first], noise, linestyle="--", color=GREY, label="noise (control vs twin)"
        )
        integer_x(ax, [r["rank"] for r in section["rows"]])
        ax.set_xlabel("search result rank")
        ax.set_ylabel("% results changed")
        ax.set_ylim(bottom=0)  # as Figure 15: the share from zero
        ax.legend(frameon=False)
    columns = ["treatment", "rank", "changed", "noise"]
    text = caption.plain(
        study,
        "Share of results changed at each rank, each treatment against the control (dashed: noise)",
        _n(answers),
        METHOD,
    )
    return section_figure(
        "figure5_by_rank", "Figure 5: results changed per rank, per treatment", text, fig, section, columns
    )


def by_treatment(study: str, answers: dict[str, Any]) -> Figure:
    """Figures 6-11: average Jaccard index and edit distance per treatment, beside the noise."""
    fig = new_figure(6.4, 2.6)
    axes = fig.subplots(1, 2)
    section = answers["by_treatment"]
    labels = [r["treatment"] for r in section["rows"]]
    for ax, measure, label in (
        (axes[0], "jaccard", "Avg. Jaccard"),
        (axes[1], "edit_distance", "Avg. Edit Distance"),
    ):
        if empty(ax, section, "no compared rounds"):
            continue
        grouped(ax, labels, [
            ("treatment", colour("", 0), [(r[measure], None, None) for r in section["rows"]]),
            ("noise", GREY, [(r[f"{measure}_noise"], None, None) for r in section["rows"]]),
        ])  # fmt: skip
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=30)
        same_y(ax)
        ax.legend(frameon=False)
    columns = ["treatment", "pairs", "jaccard", "jaccard_noise", "edit_distance", "edit_distance_noise"]
    text = caption.plain(
        study, "Each treatment's page against the control's, per treatment value", _n(answers), METHOD
    )
    return section_figure(
        "figures6_11_by_treatment",
        "Figures 6-11: Jaccard and edit distance per treatment",
        text,
        fig,
        section,
        columns,
    )


MEASURES = (("jaccard", "Avg. Jaccard"), ("edit_distance", "Avg. Edit Distance"))
"""The two panels of Figures 12 and 13: (a) Jaccard index, (b) edit distance."""


def _day_pairs(section: dict[str, Any]) -> list[tuple[str, str]]:
    """The (previous day, day) pairs of a section, in order: the x axis of Figures 12-13."""
    return sorted({(r["previous_day"], r["day"]) for r in section["rows"]}, key=lambda p: (p[1], p[0]))


def _pair_label(pair: tuple[str, str]) -> str:
    """A day pair as the paper writes it ("1/2"): the two days of the month (the x label
    gives the dates)."""
    return f"{int(pair[0][8:])}/{int(pair[1][8:])}"


def _days_lines(
    fig: MplFigure, section: dict[str, Any], line: str, label: Callable[[dict[str, Any]], str], what: str
) -> None:
    """Figures 12-13: Jaccard (a) and edit distance (b) over day pairs, one line per ``line``."""
    axes = fig.subplots(1, 2)
    pairs = _day_pairs(section)
    for ax, (measure, ylabel), panel in zip(
        axes, MEASURES, ("(a) Jaccard Index", "(b) Edit Distance"), strict=True
    ):
        ax.set_title(panel)
        if empty(ax, section, what):
            continue
        for i, rows in enumerate(by(section, line).values()):
            at = {(r["previous_day"], r["day"]): r[measure] for r in rows}
            xs = [k for k, p in enumerate(pairs) if p in at]
            ax.plot(
                xs,
                [at[pairs[k]] for k in xs],
                marker="o",
                markersize=3,
                color=colour("", i),
                label=label(rows[0]),
            )
        ax.set_xticks(range(len(pairs)), [_pair_label(p) for p in pairs])
        ax.tick_params(axis="x", rotation=45 if len(pairs) > 10 else 0)
        ax.set_xlabel(f"pairs of days ({pairs[0][0]} to {pairs[-1][1]})")
        ax.set_ylabel(ylabel)
        ax.set_xlim(-0.5, len(pairs) - 0.5)
    if section["rows"]:
        axes[0].set_ylim(0, 1.05)
        axes[1].set_ylim(0, max(1.0, max(r["edit_distance"] for r in section["rows"]) * 1.15))
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right upper", frameon=False)


def consistency_days(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 12: day-to-day Jaccard and edit distance, one line per account over day pairs."""
    fig = new_figure(7.0, 2.6)
    section = answers["consistency_days"]

    def label(row: dict[str, Any]) -> str:
        return f"{row['profile_id']} ({row['treatment'] or row['role']})"

    _days_lines(fig, section, "profile_id", label, "no day pairs (a study of one day)")
    columns = [
        "profile_id",
        "role",
        "treatment",
        "previous_day",
        "day",
        "queries",
        "jaccard",
        "edit_distance",
    ]
    text = caption.plain(
        study,
        "Each account's page against its own page of the previous day it saw the query, mean over "
        "queries, one line per account (a day: the crawler's UTC day, first usable page)",
        f"{len(by(section, 'profile_id'))} accounts, {sum(r['queries'] for r in section['rows'])} "
        "account-query day pairs",
        METHOD,
    )
    return section_figure(
        "figure12_consistency_days",
        "Figure 12: day-to-day consistency per account",
        text,
        fig,
        section,
        columns,
    )


def consistency_categories(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 13: day-to-day Jaccard and edit distance, one line per query category."""
    fig = new_figure(7.0, 2.6)
    section = answers["consistency_category_days"]
    _days_lines(
        fig,
        section,
        "query_category",
        lambda row: str(row["query_category"]),
        "no day pairs (a study of one day)",
    )
    columns = ["query_category", "previous_day", "day", "pairs", "jaccard", "edit_distance"]
    text = caption.plain(
        study,
        "Each account's page against its own page of the previous day, mean over the accounts and "
        "queries of each query category, one line per category",
        f"{len(by(section, 'query_category'))} categories, "
        f"{sum(r['pairs'] for r in section['rows'])} day pairs",
        METHOD,
    )
    return section_figure(
        "figure13_consistency_categories",
        "Figure 13: day-to-day consistency per query category",
        text,
        fig,
        section,
        columns,
    )


def category_cdf(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 14: per query category, the CDF of Jaccard (left) and edit distance (right) of
    the treatments against the control on one day."""
    fig = new_figure(6.4, 2.6)
    axes = fig.subplots(1, 2, sharey=True)
    section = answers["category_cdf"]
    categories = list(by(section, "query_category"))
    for ax, (metric, xlabel), panel in zip(
        axes, (("jaccard", "Jaccard Index"), ("edit_distance", "Edit Distance")), ("(a)", "(b)"), strict=True
    ):
        ax.set_title(f"{panel} {xlabel}")
        chosen = {"rows": [r for r in section["rows"] if r["metric"] == metric]}
        if empty(ax, chosen, "no compared rounds that day"):
            continue
        for category, rows in by(chosen, "query_category").items():
            xs, ys = [r["value"] for r in rows], [r["cdf"] for r in rows]
            # a CDF is a step: flat at 0 before the first value, each value's share from it on
            ax.step([xs[0], *xs], [0.0, *ys], where="post", color=colour("", categories.index(category)),
                    label=category)  # fmt: skip
        ax.set_xlabel(xlabel)
        ax.set_ylim(0, 1.02)
        if metric == "edit_distance":
            integer_x(ax, [r["value"] for r in chosen["rows"]])
    axes[0].set_ylabel("CDF")
    if section["rows"]:
        axes[0].legend(frameon=False, loc="upper left")
    days = sorted({r["day"] for r in section["rows"]})
    pairs = sum(r["pairs"] for r in section["rows"] if r["metric"] == "jaccard")
    text = caption.plain(
        study,
        f"Per query category, the cumulative distribution of Jaccard index and edit distance of every "
        f"treatment's page against the control's, on a single day: {', '.join(days) or 'none'} "
        "(the study's first full day unless --day chose it)",
        f"{pairs} treatment/control pairs that day",
        METHOD,
    )
    columns = ["day", "query_category", "metric", "value", "pairs", "cdf"]
    return section_figure(
        "figure14_category_cdf",
        "Figure 14: personalization per query category (CDFs, one day)",
        text,
        fig,
        section,
        columns,
    )


SERIES = {
    "personalized": ("Personalized results", BLUE, "-"),
    "non_personalized": ("Non-personalized results", ORANGE, "-"),
    "noise": ("noise (control vs twin)", GREY, "--"),
}
"""Figure 15's lines: the paper's two and the control/twin noise floor beside them."""


def by_rank_grouped(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 15: % of results changed at each rank, pooled over the personalized treatments
    and over the others, beside the control/twin noise; the caption names the groups."""
    fig = new_figure(4.2, 2.8)
    ax = fig.subplots()
    section = answers["by_rank_grouped"]
    if not empty(ax, section, "no compared rounds"):
        lines = by(section, "series")
        for series in [*(s for s in SERIES if s in lines), *(s for s in lines if s not in SERIES)]:
            name, colour_, style = SERIES.get(series, (series, colour("", -1), ":"))
            rows = lines[series]
            ax.plot([r["rank"] for r in rows], [100 * r["changed"] for r in rows], marker="o",
                    markersize=3, linestyle=style, color=colour_, label=name)  # fmt: skip
        integer_x(ax, [r["rank"] for r in section["rows"]])
        ax.set_xlabel("search result rank")
        ax.set_ylabel("% results changed")
        ax.set_ylim(bottom=0)
        ax.legend(frameon=False)
    groups = answers["treatment_groups"]["rows"]
    personalized = [g["treatment"] for g in groups if g["personalized"]]
    others = [g["treatment"] for g in groups if not g["personalized"]]
    text = caption.plain(
        study,
        "Share of results changed at each rank, every test account against its control, over the "
        "results at that rank. Personalized line: "
        f"{', '.join(personalized) or 'none'}; non-personalized: {', '.join(others) or 'none'} "
        "(named with --personalized, else those whose share changed beats the noise floor, "
        "one-sided two-proportion z test at 5%; dashed: control vs twin)",
        f"{sum(r['results'] for r in section['rows'] if r['series'] != 'noise')} compared results",
        METHOD,
    )
    columns = ["series", "rank", "results", "changed"]
    return section_figure(
        "figure15_grouped",
        "Figure 15: results changed per rank, personalized vs not",
        text,
        fig,
        section,
        columns,
    )


def rank1(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 16: when rank 1 changed, the control-page rank the new one came from and where
    the old one went (0: not on the page)."""
    fig = new_figure(6.4, 2.6)
    axes = fig.subplots(1, 2, sharey=True)
    section = answers["rank1"]
    for ax, direction, title in (
        (axes[0], "came_from", "new rank 1 came from"),
        (axes[1], "moved_to", "old rank 1 moved to"),
    ):
        ax.set_title(title)
        chosen = {"rows": [r for r in section["rows"] if r["direction"] == direction]}
        if empty(ax, chosen, "rank 1 never changed"):
            continue
        ranks = sorted({r["rank"] for r in chosen["rows"]})
        series = []
        for i, (treatment, rows) in enumerate(by(chosen, "treatment").items()):
            shares = {r["rank"]: r["share"] for r in rows}
            series.append((treatment, colour(treatment, i), [(shares.get(k), None, None) for k in ranks]))
        grouped(ax, ["off page" if k == 0 else str(k) for k in ranks], series)
        ax.set_xlabel("rank on the control's page")
        same_y(ax)
        ax.legend(frameon=False)
    axes[0].set_ylabel("share of rank-1 changes")
    columns = ["treatment", "direction", "rank", "pairs", "share"]
    text = caption.plain(
        study,
        "Pairs whose rank-1 result differed from the control's",
        f"{sum(r['pairs'] for r in section['rows'] if r['direction'] == 'came_from')} changed pairs",
        METHOD,
    )
    return section_figure(
        "figure16_rank1", "Figure 16: movement of the rank-1 result", text, fig, section, columns
    )


FIGURES = {
    "figure5_by_rank": by_rank,
    "figures6_11_by_treatment": by_treatment,
    "figure12_consistency_days": consistency_days,
    "figure13_consistency_categories": consistency_categories,
    "figure14_category_cdf": category_cdf,
    "figure15_grouped": by_rank_grouped,
    "figure16_rank1": rank1,
}
"""Each figure's file name and the function that draws it."""


def draw(study: str, answers: dict[str, Any]) -> list[Figure]:
    """Every Hannak figure from ``sources.gather(sources.personalization(study), ...)``."""
    return [f(study, answers) for f in FIGURES.values()]
