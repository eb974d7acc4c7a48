"""The worker's Prometheus metrics, on a registry the worker owns and hands to its parts.

Like ingest's ``IngestMetrics``: created once in ``create_app`` and given to the sink, the
raw writer, the roll-up and the alert service, so a test or a second app in one process
gets its own counters. Events are counted once per stored event (client retries and
replays are not counted again), so rates are the real event rates the alert rules in
deploy/prometheus/rules.yml watch.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.process_collector import ProcessCollector

MAX_MARKETS = 400
"""Distinct markets a worker labels (Google's 187 domains and Bing's markets fit); the event
model lets any short code through, so a client with the public key could otherwise make
Prometheus keep millions of series. Past the cap a market is counted as ``other``."""
MAX_VERSIONS = 50
"""Distinct extension versions a worker labels (a study ships a handful)."""


class BoundedLabel:
    """A label's values as first seen, up to ``cap``; later new values are ``other``."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.seen: set[str] = set()

    def label(self, value: str) -> str:
        if value in self.seen:
            return value
        if len(self.seen) >= self.cap:
            return "other"
        self.seen.add(value)
        return value


@dataclass
class WorkerMetrics:
    registry: CollectorRegistry
    events: Counter
    identified: Counter
    units: Counter
    checks: Counter
    assigned: Gauge
    lag: Gauge
    sink_rows: Counter
    sink_seconds: Histogram
    sink_batch: Histogram
    sink_errors: Counter
    rollup_seconds: Histogram
    rollup_batches: Histogram
    rollup_errors: Counter
    alerts: Counter
    webhook: Counter

    @classmethod
    def create(cls) -> WorkerMetrics:
        reg = CollectorRegistry()
        ProcessCollector(registry=reg)  # the process_* and python_* series a scrape usually has
        for collector in (PLATFORM_COLLECTOR, GC_COLLECTOR):
            reg.register(collector)
        return cls(
            registry=reg,
            events=Counter(
                "auditstream_events_stored_total",
                "Events stored in ClickHouse, by family and engine",
                ["family", "engine"],
                registry=reg,
            ),
            identified=Counter(
                "auditstream_extension_identified_total",
                "Extension events stored, by whether the extension could identify the results "
                "(identified=false spikes when an engine changes its HTML), per engine market "
                "(the Google domain's country, Bing's market) and extension version",
                ["engine", "identified", "market", "extension_version"],
                registry=reg,
            ),
            units=Counter(
                "auditstream_units_total",
                "Click units stored per experiment, engine and arm",
                ["experiment", "engine", "arm"],
                registry=reg,
            ),
            checks=Counter(
                "auditstream_periodic_checks_total",
                "Runs of the worker's periodic checks (SRM, identification, ...) by outcome",
                ["check", "outcome"],
                registry=reg,
            ),
            assigned=Gauge(
                "auditstream_assigned_partitions",
                "Partitions of a topic assigned to this worker now",
                ["topic"],
                registry=reg,
            ),
            lag=Gauge(
                "auditstream_consumer_lag_messages",
                "Messages in a partition not yet stored and acknowledged (high watermark - committed offset)",
                ["topic", "partition"],
                registry=reg,
            ),
            sink_rows=Counter(
                "auditstream_sink_rows_total",
                "Rows written to raw tables",
                ["table", "outcome"],
                registry=reg,
            ),
            sink_seconds=Histogram(
                "auditstream_sink_batch_seconds",
                "Time to store one batch, retries included",
                ["table"],
                registry=reg,
            ),
            sink_batch=Histogram(
                "auditstream_sink_batch_events",
                "Events per sink batch",
                ["table"],
                buckets=(1, 10, 50, 100, 500, 1000, 2000, 5000, 10000),
                registry=reg,
            ),
            sink_errors=Counter(
                "auditstream_sink_errors_total",
                "Failed store attempts (retried)",
                ["table", "kind"],
                registry=reg,
            ),
            rollup_seconds=Histogram(
                "auditstream_rollup_seconds",
                "Time of one recompute of the per-install arrangement statistics",
                registry=reg,
            ),
            rollup_batches=Histogram(
                "auditstream_rollup_batches",
                "Sink batches covered by one recompute of the per-install statistics",
                buckets=(1, 2, 4, 8, 16, 32),
                registry=reg,
            ),
            rollup_errors=Counter(
                "auditstream_rollup_errors_total",
                "Failed recomputes of the per-install statistics (retried)",
                ["kind"],
                registry=reg,
            ),
            alerts=Counter(
                "auditstream_alerts_raised_total", "Alerts raised by stream detectors", ["kind"], registry=reg
            ),
            webhook=Counter(
                "auditstream_alert_webhook_posts_total",
                "Alert webhook posts by outcome",
                ["outcome"],
                registry=reg,
            ),
        )

    _markets: BoundedLabel = field(default_factory=lambda: BoundedLabel(MAX_MARKETS))
    _versions: BoundedLabel = field(default_factory=lambda: BoundedLabel(MAX_VERSIONS))

    def count_stored(self, family: str, events: Iterable[Mapping[str, Any]]) -> None:
        """Update the counters for events that were just stored for the first time."""
        engines: Tally[str] = Tally()
        identified: Tally[tuple[str, str, str, str]] = Tally()
        units: Tally[tuple[str, str, str]] = Tally()
        for e in events:
            engine = str(e.get("engine", ""))
            engines[engine] += 1
            if family == "extension":
                flag = "true" if e.get("identified") else "false"
                market = self._markets.label(str(e.get("market", "")))
                version = self._versions.label(str(e.get("extension_version", "")))
                identified[(engine, flag, market, version)] += 1
                if e.get("type") == "click":
                    units[(str(e.get("experiment_id", "")), engine, str(e.get("arm", "")))] += 1
        for engine, n in engines.items():
            self.events.labels(family, engine).inc(n)
        for labels, n in identified.items():
            self.identified.labels(*labels).inc(n)
        for labels3, n in units.items():
            self.units.labels(*labels3).inc(n)

    def set_lag(self, lag: Mapping[tuple[str, int], int], assigned: Iterable[tuple[str, int]] = ()) -> None:
        """The lag of the partitions assigned now; those revoked in a rebalance are dropped, so
        a partition another worker took over is not reported stale here."""
        self.lag.clear()
        for (topic, partition), value in lag.items():
            self.lag.labels(topic, str(partition)).set(value)
        self.assigned.clear()
        for topic, n in Tally(topic for topic, _ in assigned).items():
            self.assigned.labels(topic).set(n)
