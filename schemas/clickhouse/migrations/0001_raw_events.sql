-- Raw events, one table per event family, exactly as ingest accepted them.
-- Client retries are dropped by event_id at insert time (within the dedup horizon);
-- an identical replay after a crash has the same sorting key and is merged away by
-- ReplacingMergeTree. Always read through the views below, which use FINAL, so a
-- replay never shows up as a second row.

CREATE TABLE IF NOT EXISTS raw_extension_events
(
    event_id          UUID,
    type              LowCardinality(String),
    schema_version    UInt16,
    sent_at           DateTime64(3, 'UTC'),
    received_at       DateTime64(3, 'UTC'),
    experiment_id     LowCardinality(String),
    arm               LowCardinality(String),
    engine            LowCardinality(String),
    install_id        String,
    install_day       Date,
    extension_version LowCardinality(String),
    page_index        UInt16,
    n_organic         UInt16,
    ads_top_count     UInt16,
    box               LowCardinality(String),
    ssr_positions     Array(UInt8),
    n_candidates      Nullable(UInt64),
    identified        Bool,
    ui_lang           LowCardinality(String),
    element_type      LowCardinality(String) DEFAULT '',
    original_rank     Nullable(UInt8),
    display_rank      Nullable(UInt8),
    INDEX idx_event_id event_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (experiment_id, engine, received_at, event_id);

CREATE TABLE IF NOT EXISTS raw_serp_snapshots
(
    event_id        UUID,
    type            LowCardinality(String),
    schema_version  UInt16,
    sent_at         DateTime64(3, 'UTC'),
    received_at     DateTime64(3, 'UTC'),
    study_id        LowCardinality(String),
    round_id        String,
    profile_id      LowCardinality(String),
    role            LowCardinality(String),
    treatment       LowCardinality(String),
    engine          LowCardinality(String),
    query           String,
    query_category  LowCardinality(String),
    results         Array(Tuple(rank UInt16, type String, url String)),
    result_estimate Nullable(UInt64),
    status          LowCardinality(String),
    raw_ref         String,
    INDEX idx_event_id event_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (study_id, received_at, event_id);

CREATE TABLE IF NOT EXISTS raw_autocomplete_events
(
    event_id       UUID,
    type           LowCardinality(String),
    schema_version UInt16,
    sent_at        DateTime64(3, 'UTC'),
    received_at    DateTime64(3, 'UTC'),
    crawl_id       String,
    engine         LowCardinality(String),
    root           String,
    query          String DEFAULT '',
    parent         Nullable(String),
    depth          UInt8 DEFAULT 0,
    suggestions    Array(Tuple(rank UInt8, text String, self_loop Bool, type String)),
    status         LowCardinality(String) DEFAULT '',
    raw_ref        String DEFAULT '',
    max_depth      UInt8 DEFAULT 0,
    trimming_rule  LowCardinality(String) DEFAULT '',
    n_nodes        UInt32 DEFAULT 0,
    n_edges        UInt32 DEFAULT 0,
    n_failed       UInt32 DEFAULT 0,
    INDEX idx_event_id event_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (engine, root, received_at, event_id);

CREATE TABLE IF NOT EXISTS alerts
(
    alert_id   UUID,
    created_at DateTime64(3, 'UTC'),
    kind       LowCardinality(String),
    severity   LowCardinality(String),
    subject    String,
    summary    String,
    details    String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(created_at)
ORDER BY (kind, subject, created_at, alert_id);

-- Views defined in views/<name>.sql (applied after the migrations): extension_events,
-- serp_snapshots, autocomplete_nodes, crawl_markers.

-- Messages the worker could not store (undecodable, or refused by ClickHouse), kept with
-- the reason so nothing read from Kafka disappears silently.
CREATE TABLE IF NOT EXISTS dead_letters
(
    stored_at DateTime64(3, 'UTC') DEFAULT now64(3),
    topic     LowCardinality(String),
    reason    String,
    payload   String
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(stored_at)
ORDER BY (topic, stored_at);
