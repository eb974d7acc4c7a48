"""Each Powermeter figure draws exactly the report's numbers (its CSV is checked against the
recorded answers key by key), with the paper's panels, legends and caption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from figures import powermeter, sources
from figures.render import Figure, png_bytes, svg_bytes
from tests.test_figures.conftest import written


def _find(
    answers: dict[str, Any], engine: str, subset: str, baseline: str, arm: str, key: str
) -> dict[str, Any]:
    """The report row a CSV row names: arms, the box table or the element shares."""
    for answer in answers.values():
        if not answer or "request" not in answer or answer["request"].get("engine") != engine:
            continue
        if answer["request"].get("subset") != subset:
            continue
        tables = [answer["arms"], answer["element_shares"]] if answer["baseline"] == baseline else []
        if answer["box_subset"]["baseline"] == baseline:
            tables.append(answer["box_subset"]["arms"])
        for table in tables:
            for row in table:
                if row["arm"] == arm and key in row:
                    return dict(row)
    raise AssertionError(f"no report row for {engine} {subset} {baseline} {arm} {key}")


def _check_report_rows(fig: Figure, answers: dict[str, Any]) -> None:
    assert fig.columns == powermeter.REPORT_COLUMNS and fig.rows
    for engine, subset, baseline, arm, key, value, low, high in fig.rows:
        row = _find(answers, engine, subset, baseline, arm, key)
        assert (value, low, high) == (row[key], row.get(f"{key}_ci_low"), row.get(f"{key}_ci_high"))


@pytest.fixture
def drawn(powermeter_answers: dict[str, Any]) -> dict[str, Figure]:
    return {f.name: f for f in powermeter_draw(powermeter_answers)}


def powermeter_draw(recorded: dict[str, Any]) -> list[Figure]:
    return powermeter.draw(recorded["config"], recorded["answers"])


def test_every_listed_figure_is_drawn(drawn: dict[str, Figure], tmp_path: Path) -> None:
    assert set(drawn) == {
        "figure3_google",
        "figure3_bing",
        "figure4",
        "figure5",
        "figure6",
        "figure8",
        "figure9",
    }
    for fig in drawn.values():
        written(fig, tmp_path)
        assert "Study powermeter" in fig.caption


def test_figure3_per_engine_draws_each_registered_swap_arm(
    drawn: dict[str, Figure], powermeter_answers: dict[str, Any], tmp_path: Path
) -> None:
    answers = powermeter_answers["answers"]
    for engine, swaps in (("google", {"swap_1_2", "swap_1_3", "swap_2_3"}), ("bing", {"swap_1_2"})):
        fig = drawn[f"figure3_{engine}"]
        _check_report_rows(fig, answers)
        assert {r[3] for r in fig.rows} == {"control", *swaps}
        assert {r[4] for r in fig.rows} >= {f"ctr_c{i}" for i in range(1, 7)} | {"delta_c1", "beta_c1"}
        svg = written(fig, tmp_path)
        assert "control" in svg and "swap 1-2" in svg and "performativity gap" in svg
        report = answers[f"{engine}/all"]
        beta = next(a for a in report["arms"] if a["arm"] == "swap_1_2")["beta_c1"]
        assert f"β = {beta:.2f}" in svg  # the swapped item's distortion in the panel title
        assert "burn-in" not in fig.caption and f"first {report['burn_in_days']} days" in fig.caption
        assert report["interval_guarantee"] in fig.caption
        assert f"{report['arms'][0]['units']} units" in fig.caption or "units" in fig.caption


def test_figures_4_to_6_are_the_reports_numbers(
    drawn: dict[str, Figure], powermeter_answers: dict[str, Any]
) -> None:
    answers = powermeter_answers["answers"]
    for name in ("figure4", "figure5", "figure6"):
        _check_report_rows(drawn[name], answers)
    fig4 = drawn["figure4"]
    assert {(r[1], r[4]) for r in fig4.rows} >= {("all", "organic"), ("box", "shopping_box")}
    # the recorded service had no `ads` subset: the fallback is drawn and the caption says so
    assert answers["google/ads"]["fallback_from"] == "ads"
    assert "no subset 'ads'" in fig4.caption and "ads_no_box" in fig4.caption
    conducts = [r for r in drawn["figure5"].rows if r[4] == "beta_c1"]
    assert [(r[2], r[3]) for r in conducts] == [(b, a) for _, b, a in powermeter.FIGURE5_CONDUCTS]
    quintiles = {r[1] for r in drawn["figure6"].rows} & set(sources.QUINTILES)
    assert quintiles == set(sources.QUINTILES)


def test_pages_and_profiles_are_the_views_rows(
    drawn: dict[str, Figure], powermeter_answers: dict[str, Any]
) -> None:
    answers = powermeter_answers["answers"]
    columns = drawn["figure8"].columns
    assert drawn["figure8"].rows == [[r[c] for c in columns] for r in answers["pages"]["rows"]]
    age = [["age", r["answer"], r["installs"]] for r in answers["age"]["rows"]]
    assert [r for r in drawn["figure9"].rows if r[0] == "age"] == age
    assert "install_profiles" in drawn["figure9"].caption


def test_a_selection_without_units_draws_no_units(powermeter_answers: dict[str, Any], tmp_path: Path) -> None:
    answers = dict(powermeter_answers["answers"])
    answers["bing/all"] = None
    answers["google/box@hide_box"] = None
    answers["google/no_ads_no_box_n_candidates_q1"] = None
    figs = {f.name: f for f in powermeter.draw(powermeter_answers["config"], answers)}
    assert figs["figure3_bing"].rows == [] and "no units" in written(figs["figure3_bing"], tmp_path)
    assert figs["figure5"].rows == []
    assert "no_ads_no_box_n_candidates_q1" in figs["figure6"].caption


def test_output_is_deterministic(drawn: dict[str, Figure], powermeter_answers: dict[str, Any]) -> None:
    again = {f.name: f for f in powermeter_draw(powermeter_answers)}
    assert svg_bytes(drawn["figure5"]) == svg_bytes(again["figure5"])
    assert png_bytes(drawn["figure3_google"]) == png_bytes(again["figure3_google"])


def test_each_request_is_asked_once_and_a_missing_subset_falls_back(
    powermeter_answers: dict[str, Any],
) -> None:
    config = powermeter_answers["config"]
    needs = sources.powermeter(config)
    assert len({n.key for n in needs}) == len(needs)
    asked: list[tuple[str, Any]] = []

    def ask(path: str, body: dict[str, Any]) -> Any:
        asked.append((path, tuple(sorted(body.items()))))
        if body.get("subset") == "ads":
            raise sources.Refused(400, "unknown subset 'ads'")
        if body.get("subset") == "no_ssr_c1_c2":
            raise sources.Refused(404, "no units")
        if path == sources.SQL:
            return {"columns": ["x"], "rows": [[1]]}
        return {"arms": [], "baseline": body["baseline"]}

    answers = sources.gather(needs, ask)
    assert len(asked) == len(set(asked)) == len(needs) + 1  # the fallback is the one extra
    assert answers["google/ads"]["request"]["subset"] == "ads_no_box"
    assert answers["google/no_ssr_c1_c2"] is None
    assert answers["pages"]["rows"] == [{"x": 1}]
    with pytest.raises(sources.Refused):
        sources.gather(
            [sources.report("x", "google")], lambda p, b: (_ for _ in ()).throw(sources.Refused(503, "down"))
        )


def test_an_unregistered_experiment_is_drawn_from_its_reports_arms(
    powermeter_answers: dict[str, Any],
) -> None:
    """The board lists experiments with data whether or not they were registered."""
    config = powermeter.unregistered("powermeter")
    fig = powermeter.draw_one("figure3_bing", config, powermeter_answers["answers"])
    assert {r[3] for r in fig.rows} == {"control", "swap_1_2"}  # the arms Bing's report has
    assert powermeter.needed("figure3_google", config) == {"google/all"}
    assert powermeter.needed("figure7", config) is None
