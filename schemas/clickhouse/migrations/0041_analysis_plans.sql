-- Pre-registered analysis plans and the departures from them (issue 38; schemas/analysis_plan.py).
--
-- analysis_plans: one row per version of an experiment's plan. Version 1 is the registration
-- (PUT /v1/experiments/{id}/plan); each later version an amendment with its reason (POST
-- .../plan/amendments; `plan freeze-quintiles` is one). `plan` is the canonical JSON (keys
-- sorted, defaults filled in) and `sha256` its hash. `registered_by` is the API key's name,
-- never the key. Rows are only ever added: the history is the table.
CREATE TABLE IF NOT EXISTS analysis_plans
(
    experiment_id String,
    version       UInt32,
    plan          String,
    sha256        FixedString(64),
    registered_at DateTime64(3, 'UTC'),
    registered_by String,
    kind          LowCardinality(String),
    reason        String
)
ENGINE = MergeTree
ORDER BY (experiment_id, version);

-- plan_deviations: a report asked for a setting other than the plan's (who, when, what).
-- `what` is JSON: {"setting": {"asked": .., "planned": ..}, ...}; `plan_sha256` the plan
-- version the report departed from.
CREATE TABLE IF NOT EXISTS plan_deviations
(
    experiment_id String,
    plan_sha256   FixedString(64),
    at            DateTime64(3, 'UTC'),
    by            String,
    what          String
)
ENGINE = MergeTree
ORDER BY (experiment_id, at);
