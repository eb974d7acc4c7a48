"""What a reader of ``report experiment`` sees (issue 37): intervals within their
statistic's range, none for thin arms, the report's own warnings, the long CSV and the
planted values beside the estimates. Pure parts; the service and chDB paths are in
tests/integration/test_report_readers.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analytics.stats.arrangement_table import (
    MIN_INSTALLS,
    MIN_UNITS,
    ArmRow,
    Estimate,
    PerInstallArrays,
    figure3_arrays,
    within_range,
)
from studies.arrangement.answers import ExperimentReport, flatten
from studies.arrangement.long_form import COLUMNS, long_rows
from studies.arrangement.read.warnings import report_warnings, srm_warning, unweighted_warning
from studies.arrangement.tables import ELEMENTS

NAN = math.nan


def arm(name: str, units: int, installs: int, ctr: Estimate, gap: Estimate | None = None) -> ArmRow:
    row = ArmRow(name, units, installs, [ctr])
    if gap is not None:
        row.delta, row.beta = [gap], [Estimate(gap.value, gap.ci_low - 3, gap.ci_high + 3)]
    return row


def test_intervals_are_cut_to_their_range_and_never_past_the_estimate() -> None:
    control = arm("control", 100, 20, Estimate(0.333, -4.048, 4.714))
    swap = arm("swap_1_2", 100, 20, Estimate(0.2, -0.5, 1.2), Estimate(-0.6, -1.7, 0.4))
    per_page = arm("per_page", 100, 20, Estimate(1.3, 0.9, 1.6))  # impression mode: CTR above 1
    out = {r.arm: r for r in within_range([control, swap, per_page], "control")}
    assert (out["control"].ctr[0].ci_low, out["control"].ctr[0].ci_high) == (0.0, 1.0)
    assert (out["swap_1_2"].ctr[0].ci_low, out["swap_1_2"].ctr[0].ci_high) == (0.0, 1.0)
    assert (out["swap_1_2"].delta[0].ci_low, out["swap_1_2"].delta[0].ci_high) == (-1.0, 0.4)
    beta = out["swap_1_2"].beta[0]
    assert beta.ci_low == pytest.approx(-4.7) and beta.ci_high == 1.0  # beta = 1 - CTR/CTR(base) <= 1
    assert (out["per_page"].ctr[0].ci_low, out["per_page"].ctr[0].ci_high) == (0.9, 1.3)
    assert out["control"].ctr[0].value == 0.333  # values are never moved


def test_thin_arms_and_arms_against_a_thin_baseline_have_no_interval() -> None:
    control = arm("control", MIN_UNITS - 1, 5, Estimate(0.0, 0.0, 0.0))
    swap = arm("swap_1_2", 500, 40, Estimate(0.3, 0.25, 0.35), Estimate(0.3, 0.2, 0.4))
    lone = arm("hide_box", 50, MIN_INSTALLS - 1, Estimate(0.4, 0.4, 0.4), Estimate(0.4, 0.4, 0.4))
    out = {r.arm: r for r in within_range([control, swap, lone], "control")}
    assert out["control"].ctr[0].value == 0.0 and math.isnan(out["control"].ctr[0].ci_low)
    assert out["swap_1_2"].ctr[0].ci_low == 0.25  # enough units: kept
    assert math.isnan(out["swap_1_2"].delta[0].ci_low)  # its baseline is thin
    assert math.isnan(out["hide_box"].ctr[0].ci_high)  # one install: the bootstrap's zero width
    record = {r["arm"]: r for r in flatten(list(out.values()))}
    assert record["control"]["ctr_c1_ci_low"] is None and record["control"]["ctr_c1"] == 0.0


def test_an_arm_without_units_is_null_not_zero() -> None:
    """An arm with rows but no units (pages seen, nothing clicked in click mode): null
    estimates, and null gaps for every arm when it is the baseline."""
    rows = PerInstallArrays(
        keys=np.arange(1, 41, dtype=np.uint64).repeat(2),
        arm_codes=np.tile([0, 1], 40),
        arm_names=["control", "swap_1_2"],
        units=np.tile([0.0, 5.0], 40),
        clicks=np.tile([[0.0], [2.0]], (40, 1)),
    )
    table = within_range(figure3_arrays(rows, ranks=1, replicates=50), "control")
    record = {r["arm"]: r for r in flatten(table)}
    assert record["control"]["ctr_c1"] is None and record["control"]["ctr_c1_ci_low"] is None
    assert record["swap_1_2"]["ctr_c1"] == 0.4
    assert record["swap_1_2"]["delta_c1"] is None and record["swap_1_2"]["beta_c1_ci_high"] is None


def test_the_srm_warning_is_the_selections_test_against_the_registered_weights() -> None:
    drops = [{"arm": "control", "kept_clicks": 600}, {"arm": "swap_1_2", "kept_clicks": 400}]
    assert srm_warning(drops, {"control": 1, "swap_1_2": 1})["code"] == "srm_mismatch"  # type: ignore[index]
    assert srm_warning(drops, {"control": 3, "swap_1_2": 2}) is None  # as allocated
    assert srm_warning(drops, None) is None  # not registered: nothing to test against
    assert srm_warning([{"arm": "control", "kept_clicks": 0}], {"control": 1, "b": 1}) is None


def test_a_reweighting_that_raked_nobody_says_the_numbers_are_unweighted() -> None:
    got = unweighted_warning({"installs_with_profile": 0, "installs_raked": 0})
    assert got is not None and "0 of 0 profiled installs" in got["message"] and "unweighted" in got["message"]
    assert unweighted_warning({"installs_with_profile": 9, "installs_raked": 9}) is None
    assert unweighted_warning(None) is None  # not asked to reweight


def test_report_warnings_name_the_thin_arms_of_each_table() -> None:
    thin = arm("hide_box", 3, 1, Estimate(0.0, NAN, NAN))
    fine = arm("control", 300, 30, Estimate(0.4, 0.3, 0.5))
    found = report_warnings({"Figure 3": [fine, thin]}, [], None, None)
    assert [w["code"] for w in found] == ["too_few_units"]
    assert "Figure 3, arm hide_box: 3 units from 1 installs" in found[0]["message"]


def report_doc() -> dict:
    table = within_range(
        [
            arm("control", 300, 30, Estimate(0.43, 0.40, 0.46)),
            arm("swap_1_2", 280, 30, Estimate(0.25, 0.22, 0.28), Estimate(-0.18, -0.22, -0.14)),
        ],
        "control",
    )
    return {
        "baseline": "control",
        "arms": flatten(table),
        "box_subset": {"baseline": "hide_ads_box", "arms": flatten(table[:1])},
        "element_shares": [
            {
                "arm": "control",
                "clicks": 300,
                **dict.fromkeys(ELEMENTS, 0.075),
                "organic": 0.7,
                "organic_ci_low": 0.6,
                "organic_ci_high": 0.8,
            }
        ],
        "performative_power_lower_bound": 0.18,
        "performative_power": {
            "value": 0.18,
            "ci_low": 0.12,
            "arm": "swap_1_3",
            "against": "control",
            "method": "max over arms",
            "reason": None,
        },
        "preprocessing": [
            {
                "arm": "control",
                "all_units": 400,
                "burn_in_dropped": 90,
                "unidentified_dropped": 10,
                "later_page_dropped": 5,
                "kept_clicks": 300,
            }
        ],
        "burn_in_days": 4,
        "unit_mode": "click",
        "intervals": "sequential",
        "interval_guarantee": "...",
        "decisions": {"swap_1_2": "2026-10-02"},
        "reweighting": None,
        "unweighted_arms": None,
        "markets": [
            {
                "market": "de",
                "events": 10,
                "identified_share": 0.9,
                "units_by_arm": {"control": 4},
                "srm_chi2": None,
                "srm_p_value": None,
                "srm_mismatch": None,
            }
        ],
        "warnings": [{"code": "unweighted", "message": "raked 0 of 0"}],
        "planted": [{"arm": "swap_1_2", "quantity": "delta", "rank": 1, "value": -0.19}],
    }


def test_the_long_csv_holds_every_table_of_the_json() -> None:
    doc = report_doc()
    ExperimentReport.model_validate(doc)  # the example is a valid answer
    rows = [dict(zip(COLUMNS, r, strict=True)) for r in long_rows(doc)]
    by = {(r["table"], r["arm"], r["quantity"], r["rank"]): r for r in rows}
    delta = by[("arms", "swap_1_2", "delta", 1)]
    assert (delta["value"], delta["ci_low"], delta["ci_high"], delta["planted"]) == (
        -0.18,
        -0.22,
        -0.14,
        -0.19,
    )
    assert ("arms", "swap_1_2", "beta", 1) in by and ("arms", "control", "ctr", 1) in by
    assert by[("box_subset", "control", "ctr", 1)]["value"] == 0.43
    assert by[("element_shares", "control", "organic", None)]["ci_high"] == 0.8
    assert by[("preprocessing", "control", "kept_clicks", None)]["value"] == 300
    assert by[("markets", "control", "kept_clicks", None)]["market"] == "de"
    assert by[("decisions", "swap_1_2", "delta_c1_excluded_zero", None)]["value"] == "2026-10-02"
    power = by[("summary", "swap_1_3", "performative_power", None)]
    assert (power["value"], power["ci_low"]) == (0.18, 0.12)
    assert by[("warnings", None, "unweighted", None)]["value"] == "raked 0 of 0"
    tables = {r["table"] for r in rows}
    assert tables == {"arms", "box_subset", "element_shares", "preprocessing", "markets", "decisions",
                      "summary", "warnings"}  # fmt: skip


def test_the_table_prints_planted_values_decisions_and_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    from auditstream.cli.report import _fmt, _print_experiment

    assert _fmt(None) == "—" and _fmt(0.0, (None, None)) == "0.000"
    assert _fmt(0.43, (0.4, 0.46), 0.43) == "0.430 [0.400, 0.460] (planted 0.430)"
    _print_experiment(report_doc(), "t", 1)
    out = capsys.readouterr().out
    assert "CTR with 95% confidence sequence" in out
    assert "(planted -0.190)" in out and "delta c2" not in out  # --ranks 1: one gap column each
    assert "decision, swap_1_2: delta c1 excluded zero first on 2026-10-02" in out
    assert "warning (unweighted): raked 0 of 0" in out


def test_a_timelines_thin_windows_have_no_interval() -> None:
    """The timeline's records follow the report's rule: a thin arm loses its intervals, a
    thin baseline its gaps' and distortions' intervals; other records are the same objects."""
    from studies.arrangement.read.timeline import without_thin_intervals

    def record(arm: str, units: int, installs: int) -> dict:
        estimates = {"ctr_c1": 0.5, "ctr_c1_ci_low": 0.4, "ctr_c1_ci_high": 0.6}
        gaps = {"delta_c1": 0.1, "delta_c1_ci_low": 0.0, "delta_c1_ci_high": 0.2}
        return {"arm": arm, "units": units, "installs": installs, **estimates, **gaps}

    fine, lone = record("control", 40, 9), record("swap_1_2", 30, 1)
    out = without_thin_intervals([fine, lone], "control")
    assert out[0] is fine
    assert out[1]["ctr_c1"] == 0.5 and out[1]["ctr_c1_ci_low"] is None and out[1]["delta_c1_ci_high"] is None
    against_thin = without_thin_intervals([record("control", 5, 5), record("swap_1_2", 30, 9)], "control")
    assert against_thin[1]["ctr_c1_ci_low"] == 0.4 and against_thin[1]["delta_c1_ci_low"] is None


def test_an_interval_of_no_width_is_no_interval() -> None:
    """An arm without a click at c3 has CTR 0 in every replicate: its interval, and the
    distortion of exactly 1 it gives, are left out, not shown as [0.000, 0.000]."""
    from analytics.stats.arrangement_table import ArmRow, Estimate, within_range

    nan = float("nan")
    row = ArmRow(
        "swap_2_3",
        21,
        20,
        [Estimate(0.3, 0.1, 0.5), Estimate(0.0, 0.0, 0.0)],
        [Estimate(-0.1, -0.3, 0.1), Estimate(-0.09, -0.2, 0.0)],
        [Estimate(0.2, -0.5, 0.6), Estimate(1.0, 1.0, 1.0)],
    )
    control = ArmRow("control", 100, 80, [Estimate(0.4, 0.3, 0.5)] * 2, [Estimate(nan, nan, nan)] * 2,
                     [Estimate(nan, nan, nan)] * 2)  # fmt: skip
    (got, _) = within_range([row, control], "control")
    assert (got.ctr[0].ci_low, got.ctr[0].ci_high) == (0.1, 0.5)
    assert got.ctr[1].value == 0.0 and math.isnan(got.ctr[1].ci_low) and math.isnan(got.ctr[1].ci_high)
    assert got.beta[1].value == 1.0 and math.isnan(got.beta[1].ci_low)
    assert got.delta[1].ci_low == -0.2
