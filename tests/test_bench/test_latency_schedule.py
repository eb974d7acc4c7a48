"""The read-scale bench measures ingest latency in balanced rounds."""

from __future__ import annotations

from bench.read_scale import latency_schedule


def test_latency_rounds_are_balanced_and_drained() -> None:
    """ABBA: each condition's mean position is the same (so a drift upward in time favours
    neither), and every round without a board comes after a pause or before any board."""
    for rounds in (2, 4):
        plan = latency_schedule(rounds)
        measured = [board for board in plan if board is not None]
        assert measured.count(True) == measured.count(False) == rounds
        positions = {flag: [i for i, board in enumerate(measured) if board is flag] for flag in (True, False)}
        assert sum(positions[True]) == sum(positions[False])
        for i, board in enumerate(plan):
            if board is False:  # going back, a pause comes before any round with a board
                before = [b for b in plan[:i] if b is not False]
                assert not before or before[-1] is None, plan
    assert latency_schedule(2) == [False, True, None, True, None, False]
