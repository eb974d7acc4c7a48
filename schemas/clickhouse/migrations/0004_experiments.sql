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

CREATE VIEW IF NOT EXISTS experiments AS
SELECT experiment_id, updated_at, status, config,
       JSONExtract(config, 'arms', 'Map(String, Float64)') AS arms,
       JSONExtractString(config, 'salt') AS salt,
       JSONExtract(config, 'engines', 'Array(String)') AS engines,
       toDate(JSONExtractString(config, 'start')) AS start,
       JSONExtractUInt(config, 'burn_in_days') AS burn_in_days,
       JSONExtractString(config, 'unit_mode') AS unit_mode
FROM experiments_log FINAL;
