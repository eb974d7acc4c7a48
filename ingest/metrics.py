"""Prometheus metrics of the HTTP intake, on a registry owned by the app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass
class IngestMetrics:
    registry: CollectorRegistry
    accepted: Counter
    rejected: Counter
    requests: Counter
    latency: Histogram
    produce_latency: Histogram
    broker_up: Gauge
    replay_retained: Gauge
    replayed: Gauge
    replay_dropped: Gauge
    producers_replaced: Gauge
    storage_behind: Gauge
    unstored_oldest: Gauge

    @classmethod
    def create(cls) -> IngestMetrics:
        reg = CollectorRegistry()
        return cls(
            registry=reg,
            accepted=Counter(
                "auditstream_ingest_events_accepted",
                "Events acknowledged by Kafka, by event type and source (the API key's name)",
                ["type", "source"],
                registry=reg,
            ),
            rejected=Counter(
                "auditstream_ingest_events_rejected",
                "Events or requests refused, by reason and source (the API key's name; "
                "'unknown' before a key is recognised)",
                ["reason", "source"],
                registry=reg,
            ),
            requests=Counter(
                "auditstream_ingest_requests",
                "HTTP requests by route and status",
                ["route", "status"],
                registry=reg,
            ),
            latency=Histogram(
                "auditstream_ingest_request_duration_seconds",
                "Request handling time",
                ["route"],
                registry=reg,
                buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            ),
            produce_latency=Histogram(
                "auditstream_ingest_produce_duration_seconds",
                "Kafka send until acks=all",
                registry=reg,
                buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            ),
            broker_up=Gauge(
                "auditstream_ingest_broker_up",
                "1 when Kafka answers the probe",
                registry=reg,
                multiprocess_mode="min",
            ),
            replay_retained=Gauge(
                "auditstream_ingest_replay_retained_events",
                "Acknowledged events kept to be sent again if the broker loses them",
                registry=reg,
                multiprocess_mode="sum",
            ),
            replayed=Gauge(
                "auditstream_ingest_replayed_events",
                "Events sent again after broker outages, since the process started",
                registry=reg,
                multiprocess_mode="sum",
            ),
            replay_dropped=Gauge(
                "auditstream_ingest_replay_dropped_events",
                "Acknowledged events no longer kept for replay before their window ended (byte bound)",
                registry=reg,
                multiprocess_mode="sum",
            ),
            producers_replaced=Gauge(
                "auditstream_ingest_producers_replaced",
                "Kafka producers replaced because they could no longer send while the cluster "
                "answered, since the process started",
                registry=reg,
                multiprocess_mode="sum",
            ),
            storage_behind=Gauge(
                "auditstream_ingest_storage_behind",
                "1 while intake refuses events (503 storage_behind): the worker has not stored "
                "accepted events for unstored_limit_s",
                registry=reg,
                multiprocess_mode="max",
            ),
            unstored_oldest=Gauge(
                "auditstream_ingest_unstored_oldest_seconds",
                "Seconds the oldest event this process accepted has waited to be stored",
                registry=reg,
                multiprocess_mode="max",
            ),
        )

    def observe_producer(self, producer: Any) -> None:
        """The producer's state as gauges (read at each scrape)."""
        self.broker_up.set(1 if producer.ready else 0)
        self.replay_retained.set(len(producer.retained))
        self.replayed.set(producer.replayed)
        self.replay_dropped.set(producer.retained.dropped)
        self.producers_replaced.set(getattr(producer, "replaced", 0))
        tracking = producer.worker_group is not None
        self.storage_behind.set(1 if producer.storage_behind else 0)
        self.unstored_oldest.set(producer.retained.oldest_age() if tracking else 0)
