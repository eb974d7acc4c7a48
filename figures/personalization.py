"""Hannak et al. (WWW 2013), "Measuring Personalization of Web Search": the figures the
``report personalization`` sections support, drawn from them (``sources.personalization``).

What each reads: Figure 5/15 ``by_rank`` (changed, noise per rank and treatment); Figures
6-11 ``by_treatment`` (Jaccard and edit distance per treatment beside the control/twin
noise); Figures 12-13 ``consistency`` (day-to-day Jaccard and edit distance per category and
profile role); Figure 14 ``by_category`` (mean change per category, treatment vs noise: the
report has means, not the distributions of the paper's CDFs); Figure 16 ``rank1`` (where
the new rank-1 result came from and where the old one went). Figure 4 and the AMT parts
need real users' searches (docs/reproducing.md); there is nothing to draw them from.
"""

from __future__ import annotations

from typing import Any

from figures import caption
from figures.bars import grouped, same_y
from figures.render import GREY, Figure, new_figure
from figures.tables import by, colour, empty, integer_x, rows_of

METHOD = (
    "Rounds compared on every result's primary link (links = primary); means over the compared "
    "pairs, no intervals (the report gives none); noise = the control against its twin"
)


def _n(answers: dict[str, Any]) -> str:
    overall = answers["overall"]["rows"]
    return f"{overall[0]['pairs']} treatment/control pairs" if overall else "0 pairs"


def by_rank(study: str, answers: dict[str, Any]) -> Figure:
    """Figures 5 and 15: % of results changed at each rank, per treatment, against the noise."""
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
        ax.legend(frameon=False)
    columns = ["treatment", "rank", "changed", "noise"]
    text = caption.plain(
        study,
        "Share of results changed at each rank, treatment against the control (dashed: noise)",
        _n(answers),
        METHOD,
    )
    return Figure(
        "figure5_15_by_rank",
        "Figures 5 and 15: results changed per rank",
        text,
        fig,
        columns,
        rows_of(section, columns),
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
    return Figure(
        "figures6_11_by_treatment",
        "Figures 6-11: Jaccard and edit distance per treatment",
        text,
        fig,
        columns,
        rows_of(section, columns),
    )


def consistency(study: str, answers: dict[str, Any]) -> Figure:
    """Figures 12-13: day-to-day Jaccard and edit distance of each profile, per category."""
    fig = new_figure(6.4, 2.6)
    axes = fig.subplots(1, 2)
    section = answers["consistency"]
    categories = list(by(section, "query_category"))
    roles = by(section, "role")
    for ax, measure, label in (
        (axes[0], "jaccard", "Avg. Jaccard"),
        (axes[1], "edit_distance", "Avg. Edit Distance"),
    ):
        if empty(ax, section, "no day pairs (a study of one day)"):
            continue
        series = []
        for i, (role, rows) in enumerate(roles.items()):
            values = {r["query_category"]: r[measure] for r in rows}
            series.append((role, colour(role, i), [(values.get(c), None, None) for c in categories]))
        grouped(ax, categories, series)
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=30)
        same_y(ax)
        ax.legend(frameon=False)
    columns = ["query_category", "role", "day_pairs", "jaccard", "edit_distance"]
    n = f"{sum(r['day_pairs'] for r in section['rows'])} day pairs"
    text = caption.plain(
        study,
        "Each profile's page against its own page of the previous day "
        "(a day: the crawler's UTC day, first usable page)",
        n,
        METHOD,
    )
    return Figure(
        "figures12_13_consistency",
        "Figures 12-13: day-to-day consistency per category",
        text,
        fig,
        columns,
        rows_of(section, columns),
    )


def by_category(study: str, answers: dict[str, Any]) -> Figure:
    """Figure 14 (as means): share of results changed per query category, treatment vs noise."""
    fig = new_figure(6.4, 2.6)
    ax = fig.subplots()
    section = answers["by_category"]
    if not empty(ax, section, "no compared rounds"):
        categories = list(by(section, "query_category"))
        series = []
        for i, (treatment, rows) in enumerate(by(section, "treatment").items()):
            values = {r["query_category"]: r["changed"] for r in rows}
            series.append(
                (treatment, colour(treatment, i), [(values.get(c), None, None) for c in categories])
            )
        noise = {r["query_category"]: r["changed_noise"] for r in section["rows"]}
        series.append(("noise", GREY, [(noise.get(c), None, None) for c in categories]))
        grouped(ax, categories, series)
        ax.set_ylabel("share of results changed")
        ax.tick_params(axis="x", rotation=30)
        same_y(ax)
        ax.legend(frameon=False)
    columns = ["query_category", "treatment", "pairs", "changed", "changed_noise"]
    text = caption.plain(
        study,
        "Per query category, mean share of results changed against the control "
        "(the paper's CDFs: docs/reproducing.md has the SQL)",
        _n(answers),
        METHOD,
    )
    return Figure(
        "figure14_by_category",
        "Figure 14: personalization per query category (means)",
        text,
        fig,
        columns,
        rows_of(section, columns),
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
    return Figure(
        "figure16_rank1",
        "Figure 16: movement of the rank-1 result",
        text,
        fig,
        columns,
        rows_of(section, columns),
    )


FIGURES = {
    "figure5_15_by_rank": by_rank,
    "figures6_11_by_treatment": by_treatment,
    "figures12_13_consistency": consistency,
    "figure14_by_category": by_category,
    "figure16_rank1": rank1,
}
"""Each figure's file name and the function that draws it."""


def draw(study: str, answers: dict[str, Any]) -> list[Figure]:
    """Every Hannak figure from ``sources.gather(sources.personalization(study), ...)``."""
    return [f(study, answers) for f in FIGURES.values()]
