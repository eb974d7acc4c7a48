"""The worker's Prometheus metrics count what was stored: units per arm, identification, lag."""

from __future__ import annotations

import time

import pytest

from collectors.simulate.extension_traffic import TrafficConfig
from tests.helpers import Service, post_study, wait_for, worker_metrics

pytestmark = pytest.mark.integration


def covered(metrics: dict[str, float]) -> tuple[float, float, float]:
    """(extension sink batches, batches covered by per-install recomputes, recomputes)."""
    return (
        metrics.get('auditstream_sink_batch_events_count{table="raw_extension_events"}', 0.0),
        metrics.get("auditstream_rollup_batches_sum", 0.0),
        metrics.get("auditstream_rollup_batches_count", 0.0),
    )


def settled_counters(service: Service) -> tuple[float, float, float]:
    """The counters once the worker is idle: no lag, and the same values for 3 s (three
    roll-up intervals), so a batch another test file left behind is not half counted."""
    last: list[tuple[tuple[float, float, float], float]] = []  # (value, first read at)

    def steady() -> tuple[float, float, float] | None:
        metrics = worker_metrics(service)
        now = covered(metrics)
        lagging = any(v for k, v in metrics.items() if k.startswith("auditstream_consumer_lag"))
        if lagging or not last or last[0][0] != now:
            last[:] = [(now, time.monotonic())]
            return None
        return now if time.monotonic() - last[0][1] >= 3 else None

    return wait_for(steady, 60, "the worker idle before the test")


def test_units_identification_and_lag(service: Service) -> None:
    before = settled_counters(service)
    post_study(service, TrafficConfig(experiment_id="metrics", seed=8, installs=50), 3_000)
    recount = {
        (r["engine"], r["arm"]): r["n"]
        for r in service.sql(
            "SELECT engine, arm, count() AS n FROM extension_events "
            "WHERE experiment_id = 'metrics' AND type = 'click' GROUP BY engine, arm"
        )
    }
    metrics = worker_metrics(service)
    units = {
        (k.split('engine="')[1].split('"')[0], k.split('arm="')[1].split('"')[0]): v
        for k, v in metrics.items()
        if k.startswith("auditstream_units_total{") and 'experiment="metrics"' in k
    }
    assert units == recount
    unidentified = service.scalar(
        "SELECT countIf(NOT identified) FROM extension_events WHERE experiment_id = 'metrics'"
    )
    assert unidentified > 0
    assert (
        sum(v for k, v in metrics.items() if k.startswith("auditstream_extension_identified_total{")) >= 3000
    )

    def lag_settled() -> bool:
        lags = {
            k: v
            for k, v in worker_metrics(service).items()
            if k.startswith("auditstream_consumer_lag_messages{")
        }
        return any('topic="auditstream.extension"' in k for k in lags) and all(v == 0 for v in lags.values())

    wait_for(lag_settled, 30, "consumer lag reported and back to zero")

    # every stored extension batch was covered by exactly one per-install recompute,
    # and recomputes were shared (never more of them than batches)
    def all_covered() -> tuple[float, float, float] | None:
        now = covered(worker_metrics(service))
        batches, in_rollups, rollups = (a - b for a, b in zip(now, before, strict=True))
        return (batches, in_rollups, rollups) if batches == in_rollups else None

    batches, _, rollups = wait_for(all_covered, 30, "every batch in a per-install recompute")
    assert batches > 0 and 0 < rollups <= batches
