"""One frozen settings object with every service setting.

Every field can be set with an ``AUDITSTREAM_<FIELD>`` environment variable
(for example ``AUDITSTREAM_KAFKA_BOOTSTRAP``) or with the matching CLI flag.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

if TYPE_CHECKING:
    from core.store.base import QueryLimits


class Settings(BaseSettings):
    """Configuration for every auditstream process.

    Empty ``kafka_bootstrap`` means "start a local broker" (``broker``: tansu); empty
    ``clickhouse_url`` means "use chDB under ``data_dir``" (through the store
    process in embedded mode, see ``store_url``).
    """

    model_config = SettingsConfigDict(env_prefix="AUDITSTREAM_", frozen=True, extra="ignore")

    # where embedded state lives
    data_dir: Path = Field(Path("data"), description="Directory for chDB data, keys and pids.")

    # Kafka
    kafka_bootstrap: str = Field("", description="host:port list of an external Kafka cluster.")
    broker: Literal["tansu", "kafka"] = Field(
        "tansu",
        description="The broker `up` runs when kafka_bootstrap is empty: tansu (embedded, in memory) "
        "or kafka (a local one-node Apache Kafka, its data on disk in data_dir/kafka; "
        "supervisor/kafka_cluster.py).",
    )
    partitions: int = Field(6, ge=1, le=256, description="Partitions per event topic.")
    topic_prefix: str = Field("auditstream", description="Prefix of every topic name.")
    topic_replication_factor: int | None = Field(
        None,
        ge=1,
        description="Copies of each topic the service creates; unset: the cluster's brokers, at most 3 "
        "(1 on the embedded tansu).",
    )
    kafka_cache_dir: Path | None = Field(
        None,
        description="Where Apache Kafka's jars are fetched with Maven, once per machine "
        "(unset: ~/.cache/auditstream; supervisor/kafka_cluster.py).",
    )
    kafka_version: str | None = Field(
        None,
        pattern=r"^\d+\.\d+\.\d+$",
        description="The Apache Kafka release supervisor/kafka_cluster.py fetches and runs "
        "(unset: its KAFKA_VERSION; deploy/kafka/README.md says which were tried).",
    )

    # ClickHouse
    clickhouse_url: str = Field("", description="clickhouse://user:pass@host:9000/db of a ClickHouse server.")
    clickhouse_read_url: str = Field(
        "",
        description="The same server as a read-only user, for the read lanes (the board, analysts' "
        "SQL; unset: clickhouse_url's user).",
    )
    clickhouse_cluster: str = Field(
        "",
        description="With a ClickHouse server: the cluster `db migrate --cluster` laid the tables out on; "
        "the service's DELETE, OPTIMIZE, ALTER and TRUNCATE of a sharded table then run on its local "
        "tables ON CLUSTER (schemas/cluster_ddl.runtime_statements).",
    )
    store_url: str = Field("", description="http://host:port of the process that owns chDB (embedded mode).")
    store_token: SecretStr = Field(SecretStr(""), description="Shared secret for store_url.")
    store_port: int = Field(0, ge=0, le=65535, description="Port of the store (0 = any free).")
    store_read_lanes: int = Field(
        2, ge=1, le=16, description="chDB connections for read-only queries (writes have their own)."
    )
    sql_max_execution_time_s: float = Field(
        30.0, gt=0, description="Analyst SQL (/v1/sql): longest run before the store stops it."
    )
    sql_max_memory_usage: int = Field(2 * 1024**3, ge=1, description="Analyst SQL: most memory (bytes).")
    sql_max_result_rows: int = Field(100_000, ge=1, description="Analyst SQL: most rows in an answer.")
    sql_max_rows_to_read: int = Field(
        20_000_000_000, ge=1, description="Analyst SQL: most rows a query may read."
    )
    sql_max_result_bytes: int = Field(
        64 * 1024**2, ge=1, description="Analyst SQL: most bytes in an answer (before JSON)."
    )
    sql_max_statement_bytes: int = Field(
        262_144,
        ge=1024,
        description="Analyst SQL: longest statement (UTF-8 bytes), refused with 413 before it is "
        "parsed (ClickHouse's own max_query_size).",
    )
    sql_max_concurrent_per_key: int = Field(
        2, ge=1, description="Analyst SQL: queries one key may have in flight (more: 429)."
    )
    sql_guard_processes: int = Field(
        2, ge=1, le=16, description="Analyst SQL: processes per ingest process that check statements."
    )
    sql_guard_cpu_s: float = Field(
        5.0,
        gt=0,
        description="Analyst SQL: most CPU seconds checking one statement may take (more: 400 "
        "statement_too_complex); a statement waits at most twice this for a free checking process "
        "(then 503 sql_guard_busy).",
    )
    dedup_horizon_days: int = Field(
        7,
        ge=1,
        description="How far apart two copies of an event_id are recognised (a client's retry, an import).",
    )

    # ingest
    host: str = Field("127.0.0.1", description="Address the HTTP intake binds to.")
    port: int = Field(8080, ge=0, le=65535, description="Port of the HTTP intake.")
    keys_file: Path | None = Field(None, description="API key file (default data_dir/keys.json).")
    ingest_processes: int = Field(
        1, ge=1, le=16, description="Ingest processes sharing the port in embedded mode."
    )
    max_body_bytes: int = Field(1024 * 1024, description="Largest accepted request body.")
    max_events_per_request: int = Field(500, ge=1, description="Largest accepted batch.")
    import_max_body_bytes: int = Field(
        64 * 1024 * 1024, ge=1024, description="Largest chunk of JSON lines POST /v1/import accepts."
    )
    body_read_timeout_s: float = Field(
        30.0,
        gt=0,
        description="A JSON request body must arrive whole within this (seconds), and a chunk sent "
        "to POST /v1/import may go this long without a byte; else 408 body_timeout and the "
        "connection is closed.",
    )
    rate_limit_rps: float = Field(2000.0, gt=0, description="Requests per second per API key.")
    rate_limit_burst: int = Field(4000, ge=1, description="Burst size of the per-key limiter.")
    produce_timeout_s: float = Field(5.0, gt=0, description="Longest wait for Kafka acks.")
    replay_window_s: float = Field(
        120.0,
        ge=0,
        description="With unstored_limit_s 0: acknowledged events ingest keeps, and sends again when "
        "the broker comes back after an outage (seconds; longer than the worker's lag; 0 = off).",
    )
    replay_max_bytes: int = Field(
        256 * 1024 * 1024,
        ge=0,
        description="Most bytes of accepted events kept for replay per ingest process; with "
        "unstored_limit_s, intake answers 503 storage_behind rather than keep more.",
    )
    unstored_limit_s: float = Field(
        60.0,
        ge=0,
        description="Ingest keeps every accepted event until the worker stored it, and answers 503 "
        "storage_behind (Retry-After) once one has waited this long (seconds): with a broker that "
        "keeps events in memory (tansu), nothing answered 202 may depend on it alone. 0 = off "
        "(a durable, replicated Kafka: events are kept replay_window_s only).",
    )
    retry_after_s: int = Field(5, ge=1, description="Retry-After sent with 503 answers.")

    # worker
    batch_size: int = Field(
        1000, ge=1, description="Kafka messages per sink batch (a message holds 1+ events)."
    )
    batch_within_s: float = Field(0.25, gt=0, description="Longest wait to fill a batch.")
    workers: int = Field(1, ge=1, le=16, description="Worker processes in embedded mode.")
    targets_file: Path | None = Field(
        None,
        description="Target population margins (CSV dimension,bin,share; docs/reweighting.md): "
        "the board shows experiment estimates reweighted to them beside the panel's own.",
    )
    estimators: bool = Field(
        True, description="Keep the per-install arrangement statistics (off: raw + minute aggregate)."
    )
    rollup_interval_s: float = Field(
        1.0,
        ge=0,
        description="At most one recompute of the per-install statistics per interval (seconds); "
        "batches stored meanwhile share it and are acknowledged after it.",
    )
    hourly_interval_s: float = Field(
        5.0,
        ge=0,
        description="At most one recompute of the per-hour bootstrap replicate sums (report "
        "timeline) per interval (seconds); each recomputes its hours whole, so it runs less often "
        "than the per-install statistics. Batches are acknowledged after both.",
    )
    worker_metrics_port: int = Field(
        0, ge=0, le=65535, description="Serve worker Prometheus metrics here (0 = off)."
    )
    # autocomplete shocks (analytics/stats/autocomplete_shocks.py documents the rule)
    shock_baseline_window: int = Field(6, ge=1, description="Previous crawls of a root in its nmi baseline.")
    shock_min_history: int = Field(3, ge=1, description="Crawls a root needs before it is judged.")
    shock_drop: float = Field(0.1, gt=0, le=1, description="nmi drop below the root's baseline that counts.")
    shock_min_share: float = Field(0.5, gt=0, le=1, description="Share of judged roots that must drop.")
    shock_min_roots: int = Field(3, ge=1, description="Roots that must be judged in a round.")
    shock_settle_s: float = Field(
        30.0,
        ge=0,
        description="A round's shock is judged once every started root is analysed, none of its "
        "markers has arrived for this long (seconds), and the worker has stored what its partitions "
        "held then: a root's start stored late, from a partition behind the others, is not left out.",
    )
    identification_check_s: float = Field(
        30.0, gt=0, description="How often the identification-failure detector looks (seconds)."
    )
    alert_webhook_url: str = Field("", description="POST every new alert here as JSON (Slack-compatible).")
    personalization_round_wait_s: float = Field(
        600.0, gt=0, description="How long a SERP round waits for its late snapshots (seconds)."
    )
    broker_memory_warn_mb: int = Field(2048, description="Warn when tansu's RSS passes this.")
    broker_rotate_mb: int = Field(
        1024,
        ge=0,
        description="Replace the embedded broker (tansu keeps every message in memory) once its RSS "
        "passes this (MiB; 0 = never): intake pauses (503 broker_rotating), the worker stores "
        "everything, then a fresh broker starts.",
    )
    broker_rotate_every_s: float = Field(
        0.0, ge=0, description="Also replace the embedded broker this often (seconds; 0 = only by size)."
    )
    broker_rotate_at: str = Field(
        "",
        pattern=r"^$|^([01]\d|2[0-3]):[0-5]\d$",
        description="Also replace the embedded broker every day at this UTC time (HH:MM; '' = off), "
        "so its memory peaks at one day's traffic: intake answers 503 broker_rotating for a few "
        "seconds, which the extension retries. Pick a quiet hour of the study's panel.",
    )
    clock_offset_file: Path | None = Field(
        None,
        description="Benchmarks and soak tests only: a file holding whole seconds that ingest adds to "
        "received_at (read again at most once a second, in the background; missing or invalid = 0), "
        "so a compressed study's simulated days are real UTC days in the data (bench/soak.py).",
    )

    @property
    def resolved_keys_file(self) -> Path:
        return self.keys_file or self.data_dir / "keys.json"

    @property
    def sql_limits(self) -> QueryLimits:
        """The limits of an analyst's query (``/v1/sql``)."""
        from core.store.base import QueryLimits  # core.store's factory imports these settings

        return QueryLimits(
            self.sql_max_execution_time_s,
            self.sql_max_memory_usage,
            self.sql_max_result_rows,
            self.sql_max_rows_to_read,
            self.sql_max_result_bytes,
        )

    @property
    def chdb_path(self) -> Path:
        return self.data_dir / "clickhouse"

    @property
    def run_dir(self) -> Path:
        return self.data_dir / "run"
