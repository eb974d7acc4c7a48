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


def test_with_progress_tracking_records_stay_until_the_worker_committed_past_them() -> None:
    now = [0.0]
    kept = Retained(window_s=60, max_bytes=10_000, clock=lambda: now[0], track_progress=True)
    kept.add(records(3), {("t", 0): 4, ("t", 1): 9})
    now[0] = 10
    kept.add(records(2), {("t", 0): 7})
    now[0] = 500  # far past the window: age alone frees nothing
    assert len(kept.records()) == 5 and kept.oldest_age() == 500
    kept.prune_stored({("t", 0): 8})  # partition 1 not stored yet: the first request stays
    assert len(kept) == 3 and kept.oldest_age() == 500
    kept.prune_stored({("t", 0): 8, ("t", 1): 10})
    assert len(kept) == 0 and kept.bytes == 0 and kept.oldest_age() == 0


def test_committed_at_a_records_offset_is_not_past_it() -> None:
    kept = Retained(window_s=60, max_bytes=10_000, track_progress=True)
    kept.add(records(1), {("t", 0): 4})
    kept.prune_stored({("t", 0): 4})  # Kafka's committed offset is the next one to read
    assert len(kept) == 1
    kept.prune_stored({("t", 0): 5})
    assert len(kept) == 0


def test_after_the_broker_lost_its_log_nothing_counts_as_stored_until_sent_again() -> None:
    kept = Retained(window_s=60, max_bytes=10_000, track_progress=True)
    kept.add(records(2), {("t", 0): 100})
    entries = kept.forget_marks()
    kept.prune_stored({("t", 0): 10_000})  # offsets of the old log say nothing now
    assert len(kept) == 2
    entries[0].marks = {("t", 0): 1}  # the replay's acknowledgement
    kept.prune_stored({("t", 0): 2})
    assert len(kept) == 0


def test_with_progress_tracking_the_byte_bound_drops_nothing() -> None:
    kept = Retained(window_s=60, max_bytes=100, clock=lambda: 0.0, track_progress=True)
    for _ in range(3):
        kept.add(records(4, size=10), {("t", 0): 1})
    assert kept.bytes == 120 and len(kept) == 12 and kept.dropped == 0
