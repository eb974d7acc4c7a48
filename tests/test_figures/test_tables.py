"""The Hannak and RAI figures draw the report sections' rows as they are (CSV = the
section's columns, row for row), each with its panels, legends and caption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from figures import autocomplete, personalization, sources
from tests.test_figures.conftest import written

CONSISTENCY = {
    "request": {},
    "rows": [
        {
            "query_category": "health",
            "role": "control",
            "day_pairs": 10,
            "jaccard": 0.9,
            "edit_distance": 0.5,
        },
        {
            "query_category": "health",
            "role": "logged_in",
            "day_pairs": 10,
            "jaccard": 0.7,
            "edit_distance": 1.5,
        },
    ],
}
SECTION_OF = {
    "figure5_15_by_rank": "by_rank",
    "figures6_11_by_treatment": "by_treatment",
    "figures12_13_consistency": "consistency",
    "figure14_by_category": "by_category",
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
    personalization_answers["consistency"] = CONSISTENCY  # the recorded study ran one day
    figs = personalization_draw(personalization_answers)
    assert [f.name for f in figs] == list(SECTION_OF)[:5]
    _check(figs, personalization_answers, tmp_path)
    assert "logged_in" in written(figs[1], tmp_path) and "noise" in written(figs[1], tmp_path)


def personalization_draw(answers: dict[str, Any]) -> list[Any]:
    return personalization.draw("pers-sim", answers)


def test_an_empty_section_says_so(personalization_answers: dict[str, Any], tmp_path: Path) -> None:
    fig = personalization.consistency("pers-sim", personalization_answers)
    assert fig.rows == [] and "no day pairs" in written(fig, tmp_path)


def test_autocomplete_figures(autocomplete_answers: dict[str, Any], tmp_path: Path) -> None:
    figs = autocomplete.draw("rai-sim", autocomplete_answers)
    assert [f.name for f in figs] == list(SECTION_OF)[5:]
    _check(figs, autocomplete_answers, tmp_path)
    assert "google" in written(figs[0], tmp_path)


def test_the_papers_ask_the_report_sections() -> None:
    assert {n.key for n in sources.personalization("s")} == set(sources.PERSONALIZATION_SECTIONS)
    assert {n.key for n in sources.autocomplete("p")} == {*sources.AUTOCOMPLETE_TABLES, "associations"}
    assert all(n.path == sources.SQL for n in sources.autocomplete("p"))
