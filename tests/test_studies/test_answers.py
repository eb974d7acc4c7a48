"""The arrangement experiment's answers are defined once (``studies/arrangement/answers.py``):
the forms the board, the reports, CSV and the OpenAPI document give are checked against the
models here, so a form that drifts from its model fails."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from ingest import openapi_models
from ingest.openapi import OPERATIONS
from studies.arrangement import answers
from studies.arrangement.answers import (
    COUNTS,
    ESTIMATES,
    DecisionLine,
    Estimate,
    Figure3,
    Figure3Arm,
    ReportArm,
    Timeline,
    arm_json,
    figure3_json,
    flat_columns,
    flatten,
    record_keys,
)
from studies.arrangement.read.report import ExperimentReport, element_share_rows, report_json, table_from_rows

ROOT = Path(__file__).resolve().parents[2]
ROWS = [
    {"install_id": f"i{i}", "arm": arm, "n_units": 5 + i % 3, "n_clicks": [i % 4, (i + 1) % 3, i % 2]}
    for i in range(24)
    for arm in ("control", "swap_1_2", "hide_ads_box")
]


def table(ranks: int = 3, baseline: str = "control") -> list[Any]:
    return table_from_rows(ROWS, ranks, seed=1, baseline=baseline)


def test_the_nested_form_is_the_model() -> None:
    doc = figure3_json(table(), 3, "control")
    assert Figure3.model_validate(doc).model_dump() == doc  # closed models: no key more or less
    assert list(arm_json(table()[0])) == list(Figure3Arm.model_fields)
    assert ESTIMATES == ("ctr", "delta", "beta") and COUNTS == ("arm", "units", "installs")
    assert set(answers.BOUNDS) == set(Estimate.model_fields)


def test_the_flat_form_is_the_nested_one_column_by_column() -> None:
    rows = table()
    for flat, row in zip(flatten(rows), rows, strict=True):
        ReportArm.model_validate(flat)
        # CSV's header is the model's columns, in order (the baseline has no gaps of its own)
        assert list(flat) == [c for c in flat_columns(3) if c in flat]
        assert list(flat) == flat_columns(3) or row.arm == "control"
        nested = Figure3Arm.model_validate(arm_json(row))
        for name in ESTIMATES:
            for i, estimate in enumerate(getattr(nested, name), start=1):
                keys = record_keys(name, i)
                assert [flat[k] for k in keys] == [getattr(estimate, f) for f in answers.BOUNDS]


def test_the_report_is_its_model() -> None:
    rows = table()
    shares = element_share_rows(
        [{"arm": "control", "organic": 5, "ad": 1, "shopping_box": 0, "ssr": 0, "other": 1}]
    )
    report = ExperimentReport(
        "control",
        rows,
        table(3, "hide_ads_box"),
        shares,
        [
            {
                "arm": "control",
                "all_units": 9,
                "burn_in_dropped": 1,
                "unidentified_dropped": 0,
                "kept_clicks": 8,
            }
        ],
        intervals="sequential",
        decisions={"swap_1_2": "2026-10-02", "hide_ads_box": None},
    )
    doc = {**report_json(report), "burn_in_days": 4, "unit_mode": "click"}
    answers.ExperimentReport.model_validate(doc)
    DecisionLine.model_validate(doc["decisions"])


def test_performative_power_is_against_control_whatever_the_baseline() -> None:
    """With ``--baseline hide_ads_box`` the report's gaps are against that arm, but the
    bound on performative power is the theorem's: against control, with a lower bound."""
    shares = element_share_rows([])
    against_control = table(1, "control")
    report = ExperimentReport(
        "hide_ads_box", table(3, "hide_ads_box"), [], shares, [], against_control=against_control
    )
    doc = report_json(report)
    drops = {r.arm: -r.delta[0].value for r in against_control if r.delta}
    arm = max(drops, key=drops.__getitem__)
    power = doc["performative_power"]
    assert (power["arm"], power["against"]) == (arm, "control")
    assert power["value"] == doc["performative_power_lower_bound"] == round(drops[arm], 6)
    assert power["ci_low"] <= power["value"]
    answers.PerformativePower.model_validate(power)
    alone = report_json(ExperimentReport("hide_ads_box", table(3, "hide_ads_box"), [], shares, []))
    assert alone["performative_power"]["value"] is None and "control" in alone["performative_power"]["reason"]


def test_the_timeline_is_its_model() -> None:
    doc = {
        "window_seconds": 3600,
        "baseline": "control",
        "burn_in_days": 4,
        "unit_mode": "click",
        "windows": [{"window_start": "2026-10-01T00:00:00+00:00", "arms": flatten(table(10))}],
    }
    assert Timeline.model_validate(doc).windows[0].arms[0].arm == "control"


def test_the_openapi_document_takes_the_answers_models() -> None:
    by_path = {(op.method, op.path): op for op in OPERATIONS}
    assert by_path[("POST", "/v1/reports/experiment")].answer is answers.ExperimentReport
    assert by_path[("POST", "/v1/reports/timeline")].answer is Timeline
    board = openapi_models.BoardExperimentPanel.model_fields
    assert board["figure3"].annotation is Figure3 and board["box_subset"].annotation is Figure3
    assert board["decisions"].annotation == DecisionLine | None
    # nothing else in ingest/ defines an answer of the arrangement experiment
    for name in ("Estimate", "Figure3Arm", "Figure3", "ReportArm", "ExperimentReport", "Timeline"):
        assert getattr(openapi_models, name, getattr(answers, name)) is getattr(answers, name), name
    TypeAdapter(answers.ExperimentReport).json_schema()


BOARD_LISTS = {
    "estimate.js": {"ESTIMATE_FIELDS": "Estimate"},
    "panel-figure3.js": {
        "FIGURE3_FIELDS": "Figure3",
        "FIGURE3_ROW_FIELDS": "Figure3Arm",
        "GAP_ROW_FIELDS": "Figure3Arm",
        "WEIGHTED_ROW_FIELDS": "Figure3Arm",
        "DECISION_FIELDS": "BoardExperimentPanel",
        "GAP_ANSWER_FIELDS": "BoardExperimentPanel",
    },
    "panel-box.js": {"BOX_FIELDS": "Figure3", "BOX_ROW_FIELDS": "Figure3Arm"},
    "panel-corrections.js": {
        "CORRECTIONS_ANSWER_FIELDS": "BoardExperimentPanel",
        "CORRECTIONS_FIELDS": "Corrections",
        "FAMILY_TEST_FIELDS": "FamilyTestAnswer",
        "REDUCTION_FIELDS": "VarianceReduction",
        "REDUCED_FIELDS": "ReducedEstimate",
    },
    "panel-shares.js": {"SHARE_FIELDS": "ElementShare"},
    "panel-markets.js": {"MARKET_FIELDS": "MarketHealth"},
    "panel-drops.js": {"DROP_FIELDS": "BoardDrops"},
    "panel-srm.js": {"SRM_FIELDS": "Srm", "SRM_ARM_FIELDS": "SrmArm"},
    "experiment.js": {"EXPERIMENT_FIELDS": "BoardExperimentPanel"},
}
"""The board's field lists (ingest/board/static/*.js: each panel reads an answer only
through its list) and the model each reads."""


def board_lists() -> dict[str, dict[str, list[str]]]:
    static = ROOT / "ingest" / "board" / "static"
    script = (
        "".join(
            f"import * as m{i} from {json.dumps((static / name).as_uri())};"
            for i, name in enumerate(BOARD_LISTS)
        )
        + "console.log(JSON.stringify({"
        + ",".join(
            f"{json.dumps(name)}: {{{','.join(f'{c}: m{i}.{c}' for c in lists)}}}"
            for i, (name, lists) in enumerate(BOARD_LISTS.items())
        )
        + "}));"
    )
    done = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_board_reads_only_fields_its_answers_models_have() -> None:
    """A field the board reads that its answer's model lacks (renamed, dropped) fails here."""
    found = board_lists()
    for module, lists in BOARD_LISTS.items():
        for constant, model_name in lists.items():
            model = getattr(answers, model_name, None) or getattr(openapi_models, model_name)
            fields = found[module][constant]
            assert fields, (module, constant)
            missing = set(fields) - set(model.model_fields)
            assert not missing, f"{module} {constant} reads {sorted(missing)}, not in {model_name}"


def test_the_boards_example_experiment_answer_is_its_model() -> None:
    """The node tests' example answer (static/test/fixtures/experiment.json) is a real
    answer's shape, corrections and variance reduction included."""
    path = ROOT / "ingest" / "board" / "static" / "test" / "fixtures" / "experiment.json"
    shown = openapi_models.BoardExperimentPanel.model_validate(json.loads(path.read_text()))
    assert shown.corrections is not None and shown.corrections.tests
    assert shown.variance_reduction is not None and shown.variance_reduction.estimates
