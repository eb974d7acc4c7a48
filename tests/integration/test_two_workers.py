"""Scale-out: two workers in one consumer group split the partitions; when one stops, the
other takes its partitions over and every aggregate still equals a recount from raw."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from collectors.simulate.poster import post_batches
from tests.helpers import Service, free_port, start_up, stop_up, wait_for, worker_metrics
from tests.integration.test_end_to_end import assert_aggregate_exact, assert_install_stats_exact

pytestmark = pytest.mark.integration
EXP = "split"


def stored_by(svc: Service, worker: int) -> float:
    return sum(
        v
        for k, v in worker_metrics(svc, worker).items()
        if k.startswith("auditstream_events_stored_total{") and 'family="extension"' in k
    )


def assigned(svc: Service, worker: int) -> float:
    gauge = 'auditstream_assigned_partitions{topic="auditstream.extension"}'
    return worker_metrics(svc, worker).get(gauge, 0)


def balanced(svc: Service) -> bool:
    """Both workers hold extension partitions, all six of them between them."""
    split = (assigned(svc, 0), assigned(svc, 1))
    return min(split) > 0 and sum(split) == 6


def post(svc: Service, seed: int, total: int) -> None:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=EXP, seed=seed, installs=400))
    stats = asyncio.run(post_batches(svc.url, svc.api_key, traffic.batches(100, total)))
    assert stats.accepted == total


def count(svc: Service) -> int:
    return int(svc.scalar(f"SELECT count() FROM extension_events WHERE experiment_id = '{EXP}'"))


def test_two_workers_split_and_take_over(tmp_path: Path) -> None:
    svc = start_up(
        tmp_path / "data", free_port(), "split-key-0123456789-padded-to-35-chars", "--workers", "2"
    )
    frozen = None
    try:
        # Post once the group has settled (a rebalance mid-stream is the takeover part's job).
        wait_for(lambda: balanced(svc), 90, "both workers assigned extension partitions")
        post(svc, seed=1, total=6_000)
        wait_for(lambda: count(svc) == 6_000, 120, "the first half stored")
        # Both workers stored part of it: the group split the six partitions between them.
        assert stored_by(svc, 0) > 0 and stored_by(svc, 1) > 0
        assert stored_by(svc, 0) + stored_by(svc, 1) == 6_000

        frozen = svc.pid("worker-1")
        os.kill(frozen, signal.SIGSTOP)  # stopped, not exited: the supervisor does not replace it
        post(svc, seed=2, total=6_000)
        # Only a takeover by worker-0 (after the group drops the silent member) stores it all.
        wait_for(lambda: count(svc) == 12_000, 180, "worker-0 to take over and store everything")
        assert (
            svc.scalar(f"SELECT uniqExact(event_id) FROM raw_extension_events WHERE experiment_id = '{EXP}'")
            == 12_000
        )
        assert_aggregate_exact(svc, EXP)
        assert_install_stats_exact(svc, EXP)
    finally:
        if frozen is not None:
            os.kill(frozen, signal.SIGCONT)
        assert stop_up(svc) == 0
