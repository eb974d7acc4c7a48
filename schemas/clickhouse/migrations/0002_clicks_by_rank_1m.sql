-- Units and clicks per (experiment, engine, arm, original_rank) and minute of received_at.
-- The worker recomputes every minute a batch touched from the deduplicated raw rows and
-- writes a replacing row (newest computed_at wins), so the table equals a recount from
-- raw_extension_events after any crash or replay. Ranks 1..10 always have a row.

CREATE TABLE IF NOT EXISTS agg_clicks_by_rank_1m
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

CREATE VIEW IF NOT EXISTS clicks_by_rank_1m AS
SELECT experiment_id, engine, arm, original_rank, window_start, units, impressions, clicks,
       if(units = 0, nan, clicks / units) AS ctr
FROM agg_clicks_by_rank_1m FINAL;
