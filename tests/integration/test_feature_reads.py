"""Issue 16, Done-means 4: the confidence sequences and the reweighting are computed from the
stored per-install statistics, with no pass over the events when a report is asked again
(the board refreshes it every few seconds). The read-side latency is measured in bench/
(bench/README.md, "Tenth run")."""

from __future__ import annotations

import pytest

from tests.helpers import run_own_process

pytestmark = pytest.mark.integration

EVENT_GRAIN = {"raw_extension_events", "extension_events", "agg_arrangement_10s", "arrangement_install_day"}
"""Tables that grow with the events: raw rows, 10-second slices, per-(install, day) rows."""
PER_INSTALL = {
    "agg_arrangement_install",  # an install's span and age, per arm (the data's days)
    "agg_arrangement_install_subset",  # an install's counts per arm and subset
    "agg_arrangement_looks",  # the decision line's stored looks, one per day and arm
    "agg_arrangement_look_forgets",  # replays that invalidated stored looks
    "install_profiles",  # an install's questionnaire answers
    "experiments",  # the registry: the arms' allocation, for the report's SRM warning
    "planted_values",  # a simulated study's planted values, printed beside the estimates
}


def test_sequential_and_reweighted_reports_read_only_per_install_rows_once_the_looks_are_stored() -> None:
    """The first sequential report stores the complete days' looks (its one pass over the
    slices); every report after it, sequential, reweighted or both, names only per-install
    tables and the stored looks, and gives the same decision line (tests/integration/
    feature_reads_chdb.py)."""
    out = run_own_process("tests.integration.helpers.feature_reads_chdb")
    first = out["first sequential"]
    assert "agg_arrangement_10s" in first["tables"]  # the looks' one pass: the noting works
    assert first["decisions"] and any(day is not None for day in first["decisions"].values())
    for name in ("sequential again", "reweighted", "reweighted sequential"):
        step = out[name]
        assert step["arms"] == first["arms"] > 1, name
        assert not set(step["tables"]) & EVENT_GRAIN, (name, step["tables"])
        assert set(step["tables"]) <= PER_INSTALL, (name, step["tables"])
    assert "install_profiles" in out["reweighted"]["tables"]
    decided = first["decisions"]
    assert out["sequential again"]["decisions"] == out["reweighted sequential"]["decisions"] == decided
