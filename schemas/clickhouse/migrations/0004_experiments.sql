-- The experiment registry. One row per change; the newest updated_at wins. The config
-- column holds the full JSON (schemas/experiments.py); the others are for queries.

CREATE TABLE IF NOT EXISTS experiments_log
(
    experiment_id String,
    updated_at    DateTime64(6, 'UTC'),
    status        LowCardinality(String),
    config        String
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY experiment_id;

-- View defined in views/<name>.sql (applied after the migrations): experiments.
