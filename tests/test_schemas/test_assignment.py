from __future__ import annotations

from collections import Counter

import pytest

from schemas.assignment import assign_arm, unit_interval

ARMS = [("control", 0.5), ("swap_1_2", 0.3), ("swap_1_3", 0.2)]


def test_assignment_is_deterministic() -> None:
    assert assign_arm("inst-0001", "q", "salt", ARMS) == assign_arm("inst-0001", "q", "salt", ARMS)
    assert 0 <= unit_interval("a", "b", "c") < 1


def test_assignment_respects_weights() -> None:
    counts = Counter(assign_arm(f"install-{i}", "q", "s", ARMS) for i in range(20_000))
    for arm, weight in ARMS:
        assert counts[arm] / 20_000 == pytest.approx(weight, abs=0.015)


def test_bad_weights_are_refused() -> None:
    with pytest.raises(ValueError):
        assign_arm("a", "b", "c", [("x", 0.0)])
