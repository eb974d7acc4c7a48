"""A sequential report's family gets always-valid intervals: each member's confidence
sequence at alpha / m (Bonferroni across the family, issue 38), holding its family interval."""

from __future__ import annotations

import numpy as np
import pytest

from analytics.stats.arrangement_table import (
    PerInstallArrays,
    arms_present,
    install_matrix,
    sequential_bounds,
)
from studies.arrangement.read.corrections import corrections_json

ARMS = ("control", "swap_1_2", "swap_1_3")


def _rows(installs: int = 60, seed: int = 3) -> PerInstallArrays:
    rng = np.random.default_rng(seed)
    keys, codes, units, clicks = [], [], [], []
    for install in range(installs):
        for code, arm in enumerate(ARMS):
            n = int(rng.integers(5, 40))
            p = 0.43 if arm == "control" else 0.3
            keys.append(install + 1)
            codes.append(code)
            units.append(n)
            clicks.append([rng.binomial(n, p), rng.binomial(n, 0.15)])
    return PerInstallArrays(
        np.array(keys, np.uint64), np.array(codes), ARMS, np.array(units, float), np.array(clicks, float)
    )


@pytest.mark.parametrize("method", ["holm", "bh", "bonferroni"])
def test_each_member_has_a_sequence_at_alpha_over_m_holding_its_family_interval(method: str) -> None:
    rows = _rows()
    plain = corrections_json(rows, 2, "control", None, method, 0.95)
    seq = corrections_json(rows, 2, "control", None, method, 0.95, sequential=True)
    assert plain is not None and seq is not None
    assert "family_sequence" not in plain and "family_sequence_low" not in plain["tests"][0]
    m = len(seq["tests"])
    assert m == 4 and seq["family_sequence"]["members"] == m
    assert seq["family_sequence"]["alpha_each"] == pytest.approx(0.05 / m)
    _, _, matrix = install_matrix(rows, 2)
    own = sequential_bounds(matrix, arms_present(rows), 3, "control", 0.05)  # one member's, alone
    family = sequential_bounds(matrix, arms_present(rows), 3, "control", 0.05 / m)
    for t in seq["tests"]:
        low, high = t["family_sequence_low"], t["family_sequence_high"]
        alone = own[(t["quantity"], t["arm"])][t["rank"] - 1]
        bonferroni = family[(t["quantity"], t["arm"])][t["rank"] - 1]
        assert low <= bonferroni[0] < alone[0] < t["estimate"] < alone[1] < bonferroni[1] <= high
        if t["family_ci_low"] is not None:
            assert low <= t["family_ci_low"] and t["family_ci_high"] <= high
    # the tests themselves are the fixed-look family's, unchanged
    strip = [{k: v for k, v in t.items() if not k.startswith("family_sequence")} for t in seq["tests"]]
    assert strip == plain["tests"]
