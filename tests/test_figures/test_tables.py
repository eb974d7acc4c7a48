"""The Hannak and RAI figures draw the report sections' rows as they are (CSV = the
section's columns, row for row), each with its panels, legends and caption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from figures import autocomplete, personalization, sources
from tests.test_figures.conftest import written

SECTION_OF = {
    "figure5_by_rank": "by_rank",
    "figures6_11_by_treatment": "by_treatment",
    "figure12_consistency_days": "consistency_days",
    "figure13_consistency_categories": "consistency_category_days",
    "figure14_category_cdf": "category_cdf",
    "figure15_grouped": "by_rank_grouped",
    "figure16_rank1": "rank1",
    "figure2_depth": "depth",
    "figure3_degrees": "degrees",
    "figure4_lengths": "lengths",
    "figure5_churn": "churn",
    "figure6_survival": "survival",
    "figure7_nmi": "nmi",
    "figure9_associations": "associations",
}
"""The section each figure reads."""


def _check(figs: list[Any], answers: dict[str, Any], tmp_path: Path) -> None:
    for fig in figs:
        section = answers[SECTION_OF[fig.name]]
        assert fig.rows == [[r[c] for c in fig.columns] for r in section["rows"]], fig.name
        svg = written(fig, tmp_path)
        assert "Study" in fig.caption and "n = " in fig.caption
        assert "no intervals" in fig.caption
        if fig.rows and fig.name != "figure5_churn":
            assert "<svg" in svg and "legend" in svg  # matplotlib names the legend's group


def test_personalization_figures(personalization_answers: dict[str, Any], tmp_path: Path) -> None:
    figs = personalization_draw(personalization_answers)
    assert [f.name for f in figs] == list(SECTION_OF)[:7]
    _check(figs, personalization_answers, tmp_path)
    assert "logged_in" in written(figs[1], tmp_path) and "noise" in written(figs[1], tmp_path)


def test_hannak_figures_12_to_15_in_the_papers_layout(
    personalization_answers: dict[str, Any], tmp_path: Path
) -> None:
    """Figure 12 one line per account and 13 per category over day pairs, 14 one CDF per
    category on the day its caption names, 15 the personalized, non-personalized and noise
    lines with each line's treatments in the caption."""
    fig12, fig13, fig14, fig15 = (
        f("pers-sim", personalization_answers)
        for f in (
            personalization.consistency_days,
            personalization.consistency_categories,
            personalization.category_cdf,
            personalization.by_rank_grouped,
        )
    )
    profiles = {r["profile_id"] for r in personalization_answers["consistency_days"]["rows"]}
    for fig, lines in ((fig12, len(profiles)), (fig13, 4)):
        jaccard, edit = fig.figure.axes
        assert len(jaccard.get_lines()) == len(edit.get_lines()) == lines, fig.name
        assert [t.get_text() for t in jaccard.get_xticklabels()][:2] == ["21/22", "22/23"]
        assert jaccard.get_ylabel() == "Avg. Jaccard" and edit.get_ylabel() == "Avg. Edit Distance"
    assert "logged-in (logged_in)" in written(fig12, tmp_path)
    cdf_j, cdf_e = fig14.figure.axes
    assert len(cdf_j.get_lines()) == len(cdf_e.get_lines()) == 4
    assert "single day: 2026-11-27" in fig14.caption
    ax = fig15.figure.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "Personalized results",
        "Non-personalized results",
        "noise (control vs twin)",
    ]
    (personal,) = [ln for ln in ax.get_lines() if ln.get_label() == "Personalized results"]
    grouped = personalization_answers["by_rank_grouped"]["rows"]
    assert list(personal.get_ydata()) == [
        100 * r["changed"] for r in grouped if r["series"] == "personalized"
    ]
    assert "Personalized line: logged_in; non-personalized: location=Boston" in fig15.caption


def personalization_draw(answers: dict[str, Any]) -> list[Any]:
    return personalization.draw("pers-sim", answers)


def test_an_empty_section_says_so(personalization_answers: dict[str, Any], tmp_path: Path) -> None:
    personalization_answers["consistency_days"] = {"request": {}, "rows": []}  # a study of one day
    fig = personalization.consistency_days("pers-sim", personalization_answers)
    assert fig.rows == [] and "no day pairs" in written(fig, tmp_path)


def test_autocomplete_figures(autocomplete_answers: dict[str, Any], tmp_path: Path) -> None:
    figs = autocomplete.draw("rai-sim", autocomplete_answers)
    assert [f.name for f in figs] == list(SECTION_OF)[7:]
    _check(figs, autocomplete_answers, tmp_path)
    assert "google" in written(figs[0], tmp_path)


def test_the_papers_ask_the_report_sections() -> None:
    assert {n.key for n in sources.personalization("s")} == set(sources.PERSONALIZATION_SECTIONS)
    assert {n.key for n in sources.autocomplete("p")} == {*sources.AUTOCOMPLETE_TABLES, "associations"}
    assert all(n.path == sources.SQL for n in sources.autocomplete("p"))
