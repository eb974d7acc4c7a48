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
    needs = sources.autocomplete("p")
    assert {n.key for n in needs} == {
        *sources.AUTOCOMPLETE_TABLES,
        "associations",
        "compare_links",
        "compare_survivals",
    }
    assert all(n.path == sources.SQL for n in needs)
    assert [t for n in needs for t in n.tables] == list(sources.COMPARE_TABLES)


def test_the_compare_section_is_asked_once_and_finished_as_the_report_does() -> None:
    """One statement per compare source; survival_length and survival_by_length both come
    from the one survivals answer, as ``report autocomplete --section compare`` computes them."""
    asked: list[str] = []

    def ask(path: str, body: dict[str, Any]) -> Any:
        asked.append(body["sql"])
        if "autocomplete_association_links" in body["sql"]:
            edges = [["bing", "a", "b"], ["bing", "a", "c"], ["google", "a", "b"], ["google", "c", "b"]]
            return {"columns": ["engine", "source", "target"], "rows": edges}
        rows = [["google", "r", "a b", 1], ["google", "r", "a b c", 3], ["google", "r", "a b c d", 2]]
        return {"columns": ["engine", "root", "suggestion", "days"], "rows": rows}

    compare = [n for n in sources.autocomplete("p") if n.tables]
    answers = sources.gather(compare, ask)
    assert len(asked) == 2 and set(answers) == set(sources.COMPARE_TABLES)
    assert [r["words"] for r in answers["survival_by_length"]["rows"]] == [2, 3, 4]
    assert answers["survival_length"]["rows"][0]["groups"] == 3
    assert {(r["degree"], r["over"]) for r in answers["degree_correlation"]["rows"]} == {
        ("in", "all"),
        ("in", "both"),
        ("out", "all"),
        ("out", "both"),
    }
    assert answers["degree_correlation"]["request"] == compare[0].asked


def test_captions_carry_the_compare_section(autocomplete_answers: dict[str, Any]) -> None:
    """Figure 9's caption names the engines' degree correlation (rho, p, n), Figure 6's the
    survival-by-length test and mean days per word count; the CSVs stay the numbers drawn."""
    one_engine = autocomplete.associations("rai-sim", autocomplete_answers)
    assert "one engine, nothing to correlate" in one_engine.caption
    assert "google H = undefined, p = undefined (2004 suggestions in 4 word counts" in (
        autocomplete.survival("rai-sim", autocomplete_answers).caption
    )
    autocomplete_answers["degree_correlation"] = {
        "request": {},
        "rows": [
            {
                "engine_a": "bing",
                "engine_b": "google",
                "degree": d,
                "over": o,
                "ngrams": n,
                "rho": rho,
                "p": p,
            }
            for d, o, n, rho, p in (
                ("in", "all", 340, 0.49, 1.2e-21),
                ("in", "both", 120, 0.61, 3e-13),
                ("out", "all", 340, 0.38, 4.4e-13),
                ("out", "both", 120, None, None),
            )
        ],
    }
    autocomplete_answers["survival_length"]["rows"][0] |= {"statistic": 2.345, "p": 0.504}
    autocomplete_answers["survival_by_length"]["rows"].append(
        {"engine": "google", "words": 6, "suggestions": 3, "mean_days": 2.5, "median_days": 2}
    )
    fig9 = autocomplete.associations("rai-sim", autocomplete_answers)
    assert "bing-google in-degree rho = 0.49 (p = 1.2e-21, n = 340 n-grams)" in fig9.caption
    assert "bing-google out-degree rho = 0.38 (p = 4.4e-13, n = 340 n-grams)" in fig9.caption
    assert "0.61" not in fig9.caption  # the paper's reading: over every n-gram either has
    fig6 = autocomplete.survival("rai-sim", autocomplete_answers)
    assert "google H = 2.35, p = 0.5 (2004 suggestions" in fig6.caption
    assert "mean days by words 2: 1.0, 3: 1.0, 4: 1.0, 5: 1.0, 6+: 2.5" in fig6.caption
    assert fig6.columns == ["engine", "days", "suggestions", "share"]
