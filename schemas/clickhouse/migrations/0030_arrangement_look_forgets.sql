-- When the decision line's stored looks were forgotten (analytics/reports/decisions.py):
-- one row per forget, stamped by the store's clock after its deletes ran. A report that
-- was extending the looks from their stored totals when a forget ran may have read what
-- the forget deleted (a replay rewrote a past day); it finds the forget here and forgets
-- again, so stale totals are never carried into later days. Rows older than a week are
-- dropped: an extension takes seconds.

CREATE TABLE IF NOT EXISTS agg_arrangement_look_forgets
(
    experiment_id LowCardinality(String),
    engine        LowCardinality(String),
    from_day      Date,
    forgotten_at  DateTime64(6, 'UTC')
)
ENGINE = MergeTree
ORDER BY (experiment_id, engine, forgotten_at)
TTL toDateTime(forgotten_at) + INTERVAL 7 DAY;
