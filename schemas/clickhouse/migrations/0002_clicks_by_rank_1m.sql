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

CREATE VIEW IF NOT EXISTS clicks_by_rank_1m AS
SELECT experiment_id, engine, arm, original_rank, minute AS window_start,
       n_units AS units, n_impressions AS impressions, n_clicks AS clicks,
       if(n_units = 0, nan, n_clicks / n_units) AS ctr
FROM
(
    SELECT experiment_id, engine, arm, original_rank, toStartOfMinute(window_start) AS minute,
           sum(units) AS n_units, sum(impressions) AS n_impressions, sum(clicks) AS n_clicks
    FROM agg_clicks_by_rank_10s FINAL
    GROUP BY experiment_id, engine, arm, original_rank, minute
);
