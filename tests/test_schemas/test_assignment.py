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


def test_published_vectors_match_the_reference() -> None:
    import json
    from importlib import resources

    doc = json.loads((resources.files("schemas") / "assignment_vectors.json").read_text("utf-8"))
    arms = [tuple(a) for a in doc["arms"]]
    assert len(doc["vectors"]) >= 40
    for v in doc["vectors"]:
        assert unit_interval(v["install_id"], v["query"], v["salt"]) == v["unit_interval"]
        assert assign_arm(v["install_id"], v["query"], v["salt"], arms) == v["arm"]
    assert {v["arm"] for v in doc["vectors"]} >= {"control", "swap_1_2"}
