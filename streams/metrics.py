"""Worker metrics beyond the sink's own: what was stored, per engine, arm and topic.

Counted once per stored event (client retries and replays are not counted again), so
rates are the real event rates the alert rules in deploy/prometheus/rules.yml watch.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import Counter, Gauge

EVENTS = Counter(
    "auditstream_events_stored_total",
    "Events stored in ClickHouse, by family and engine",
    ["family", "engine"],
)
IDENTIFIED = Counter(
    "auditstream_extension_identified_total",
    "Extension events stored, by whether the extension could identify the results (identified=false "
    "spikes when an engine changes its HTML)",
    ["engine", "identified"],
)
UNITS = Counter(
    "auditstream_units_total",
    "Click units stored per experiment, engine and arm",
    ["experiment", "engine", "arm"],
)
CHECKS = Counter(
    "auditstream_periodic_checks_total",
    "Runs of the worker's periodic checks (SRM, identification, ...) by outcome",
    ["check", "outcome"],
)
ASSIGNED = Gauge(
    "auditstream_assigned_partitions", "Partitions of a topic assigned to this worker now", ["topic"]
)
LAG = Gauge(
    "auditstream_consumer_lag_messages",
    "Messages in a partition not yet stored and acknowledged (high watermark - committed offset)",
    ["topic", "partition"],
)


def count_stored(family: str, events: Iterable[Mapping[str, Any]]) -> None:
    """Update the counters for events that were just stored for the first time."""
    engines: Tally[str] = Tally()
    identified: Tally[tuple[str, str]] = Tally()
    units: Tally[tuple[str, str, str]] = Tally()
    for e in events:
        engine = str(e.get("engine", ""))
        engines[engine] += 1
        if family == "extension":
            identified[(engine, "true" if e.get("identified") else "false")] += 1
            if e.get("type") == "click":
                units[(str(e.get("experiment_id", "")), engine, str(e.get("arm", "")))] += 1
    for engine, n in engines.items():
        EVENTS.labels(family, engine).inc(n)
    for labels, n in identified.items():
        IDENTIFIED.labels(*labels).inc(n)
    for labels3, n in units.items():
        UNITS.labels(*labels3).inc(n)


def set_lag(lag: Mapping[tuple[str, int], int], assigned: Iterable[tuple[str, int]] = ()) -> None:
    """The lag of the partitions assigned now; those revoked in a rebalance are dropped, so a
    partition another worker took over is not reported stale here."""
    LAG.clear()
    for (topic, partition), value in lag.items():
        LAG.labels(topic, str(partition)).set(value)
    ASSIGNED.clear()
    for topic, n in Tally(topic for topic, _ in assigned).items():
        ASSIGNED.labels(topic).set(n)
