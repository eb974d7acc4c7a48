-- The decision line's stored looks (issue 16: the board and `report experiment --intervals
-- sequential` say when the confidence sequence for delta_1 first excluded zero). A look at
-- day d evaluates the sequence on every per-install count up to the end of d: a pass over
-- the study's slices that grows with the events. A complete day's look never changes
-- afterwards (live events are stamped with the moment they arrive, so they land on today),
-- so it is computed once and kept here; a report reads these rows plus today's look, which
-- is its own per-install totals (analytics/reports/decisions.py). An import, which writes
-- past days, forgets the study's looks and stores them anew; the worker forgets the looks
-- from a day on when it recomputes a slice of that day after the look was stored.
-- `selection` names what was looked at (subset, burn-in, identified, unit mode, seed and
-- baseline); arm '' marks the last day the looks were computed through.

CREATE TABLE IF NOT EXISTS agg_arrangement_looks
(
    experiment_id LowCardinality(String),
    engine        LowCardinality(String),
    selection     String,
    look_day      Date,
    arm           LowCardinality(String),
    installs      UInt32,
    delta_low     Float64,
    delta_high    Float64,
    computed_at   DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (experiment_id, engine, selection, look_day, arm);

-- View defined in views/<name>.sql (applied after the migrations): arrangement_looks.
