"""The example study files of issue 17 are valid and say what their comments say."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from collectors.serp.study import load_study

EXAMPLES = Path(__file__).resolve().parents[2] / "collectors" / "serp" / "examples"
TABLE_1 = {"tech": 20, "news": 20, "lifestyle": 30, "quirky": 20, "humanities": 10, "science": 20}
"""Hannak et al.'s Table 1: queries per category group (120 in 12 categories of 10)."""


def test_the_query_set_has_the_papers_shape() -> None:
    study = load_study(EXAMPLES / "query-set.toml")
    categories = Counter(q.category for q in study.queries)
    assert len(study.queries) == len({q.text for q in study.queries}) == 120
    assert len(categories) == 12 and set(categories.values()) == {10}
    assert Counter(q.category.split("/")[0] for q in study.queries) == TABLE_1
    # a day's list fits in a day at the paper's 11 minutes, for the paper's 7 days
    assert study.study.spacing == 660 and len(study.queries) * study.study.spacing < 86400
    assert study.total_rounds == 7 * 120


def test_the_carry_over_example_spans_the_papers_waits() -> None:
    study = load_study(EXAMPLES / "carry-over.toml")
    waits = [p.carry_over_wait for p in study.profiles if p.carry_over_wait is not None]
    assert waits == sorted(waits) and waits[0] == 60 and waits[-1] == 780 and 600 in waits
    assert {p.treatment for p in study.profiles if p.carry_over_wait} == {
        f"carry_over:wait={w:g}s" for w in waits
    }
    assert all(q.preceded_by for q in study.queries) and len(study.queries) == 20
    assert study.lead(0) == 780


def test_the_history_example_runs_each_kind_of_history_before_each_day() -> None:
    study = load_study(EXAMPLES / "history.toml")
    kinds = {p.id: [(s.kind, s.click is not None) for s in study.steps(p, 0)] for p in study.profiles}
    assert kinds["search-high-income"] == [("search", False)] * 3
    assert kinds["click-high-income"] == [("search", True)] * 3
    assert kinds["browse-high-income"] == [("visit", False)] * 2
    assert kinds["control"] == kinds["control-twin"] == []
    assert all(study.steps(p, 1) == () for p in study.profiles)  # the first round of a day only
    assert study.steps(study.profiles[2], 5) == study.steps(study.profiles[2], 0)  # the next day
