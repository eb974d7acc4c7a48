"""The records ingest keeps for a replay after a broker outage (ingest/producer.py)."""

from __future__ import annotations

from ingest.producer import Retained


def records(n: int, size: int = 10) -> list[tuple[str, bytes, bytes]]:
    return [("t", b"k", b"x" * size) for _ in range(n)]


def test_records_are_kept_for_the_window_then_forgotten() -> None:
    now = [0.0]
    kept = Retained(window_s=60, max_bytes=10_000, clock=lambda: now[0])
    kept.add(records(3))
    now[0] = 30
    kept.add(records(2))
    assert len(kept) == 5 and len(kept.records()) == 5
    now[0] = 61  # the first request's records are past the window
    assert len(kept.records()) == 2 and kept.dropped == 0 and kept.bytes == 20


def test_the_byte_bound_drops_the_oldest_and_counts_them() -> None:
    kept = Retained(window_s=60, max_bytes=100, clock=lambda: 0.0)
    for _ in range(3):
        kept.add(records(4, size=10))  # 40 bytes a request
    assert kept.bytes == 80 and len(kept) == 8 and kept.dropped == 4


def test_a_zero_window_keeps_nothing() -> None:
    kept = Retained(window_s=0, max_bytes=100)
    kept.add(records(3))
    assert len(kept) == 0 and kept.records() == []
