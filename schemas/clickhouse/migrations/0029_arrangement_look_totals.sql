-- The decision line's running totals: per selection (as in agg_arrangement_looks), the
-- per-install counts behind the last stored look (units and clicks on c_1 per install key
-- and arm, summed over every day up to and including `through`). A new complete day's look
-- is these totals plus that day's counts, so storing it reads one day of slices instead of
-- every day of the study (growing with the study; bench/README.md, "Figures behind the
-- code"). Written before the looks they go with, kept for the latest `through` of a
-- selection and the 3 days before it (KEEP_TOTALS_DAYS), and forgotten with the looks
-- (analytics/reports/decisions.py). The row with arm = '' marks the
-- `through` the totals were written for (a selection may have no installs yet). Two
-- writers of one day's totals (a report and the board at once) write the same rows, so
-- the table replaces them and is read with FINAL.

CREATE TABLE IF NOT EXISTS agg_arrangement_look_totals
(
    experiment_id LowCardinality(String),
    engine        LowCardinality(String),
    selection     String,
    through       Date,
    install_key   UInt64,
    arm           LowCardinality(String),
    n_units       Float64,
    c1            Float64,
    computed_at   DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (experiment_id, engine, selection, through, install_key, arm);
