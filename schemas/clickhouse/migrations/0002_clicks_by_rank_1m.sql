-- Units and clicks per (experiment, engine, arm, original_rank) and window of received_at.
-- The worker recomputes every 10-second slice a batch touched from the deduplicated raw
-- rows and writes a replacing row (newest computed_at wins), so the table equals a recount
-- from raw_extension_events after any crash or replay. Slices keep each recompute small;
-- the 1-minute view adds up the six exact slices of a minute. Ranks 1..10 always have a row.

CREATE TABLE IF NOT EXISTS agg_clicks_by_rank_10s
(
    experiment_id LowCardinality(String),
    engine        LowCardinality(String),
    arm           LowCardinality(String),
    original_rank UInt8,
    window_start  DateTime('UTC'),
    units         UInt64,
    impressions   UInt64,
    clicks        UInt64,
    computed_at   DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(window_start)
ORDER BY (experiment_id, engine, window_start, arm, original_rank);

-- View defined in views/<name>.sql (applied after the migrations): clicks_by_rank_1m.
