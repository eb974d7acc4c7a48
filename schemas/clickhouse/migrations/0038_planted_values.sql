-- Planted values of a simulated study (issue 37). `auditstream simulate extension` knows the
-- truth it plants (the click model's exact expectations over its pages and installs); it
-- stores them here (PUT /v1/experiments/{id}/planted) so the report can print each planted
-- value beside its estimate and a check can compare. A real study has no rows here.
--
-- quantity: ctr | delta | beta (of organic c_rank), as the report defines them against
-- `baseline`; subset: a report subset name ('all', 'box', ...). A later simulation of the same
-- experiment replaces the rows (ReplacingMergeTree by recorded_at; read with FINAL).
CREATE TABLE IF NOT EXISTS planted_values
(
    experiment_id String,
    engine        LowCardinality(String),
    subset        LowCardinality(String),
    baseline      LowCardinality(String),
    arm           String,
    quantity      LowCardinality(String),
    rank          UInt8,
    value         Float64,
    seed          UInt64,
    model         String,
    recorded_at   DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(recorded_at)
ORDER BY (experiment_id, engine, subset, baseline, arm, quantity, rank);
