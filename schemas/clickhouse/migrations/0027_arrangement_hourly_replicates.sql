-- Per-hour bootstrap replicate sums (issue 15: `report timeline --window 1h` reads rows that
-- grow with hours x arms, not with events). The clustered Poisson bootstrap weights each
-- install the same in every window (analytics/stats/bootstrap.py), so a replicate's sums
-- over a window are the sums of its hours' replicate sums. One row per experiment, engine,
-- hour (UTC), arm, age (capped at 7, as agg_arrangement_install) and identified, for the
-- subset 'all': the point sums, the installs counted, and the sums of 200 replicates of
-- seed 0 (REPLICATES in analytics/reports/experiment.py).
--
-- rep_units[r + 1], rep_impressions[r + 1]: replicate r's weighted units / impressions;
-- rep_clicks is rank-major: rep_clicks[i * 200 + r + 1] is replicate r's weighted clicks
-- on c_(i + 1) (i = 0..9, r = 0..199). installs_units / installs_impressions count each
-- install with units / impressions in that hour, arm and identified once, at its oldest
-- age there (an install has one age within an hour; if its events disagreed on
-- install_day, summing the rows with age >= a burn-in still counts it once).
--
-- The worker recomputes every hour a batch touched whole, from the deduplicated raw rows
-- of that hour (streams/recompute/arrangement_hourly.py: the weights in numpy), right
-- after the hour's 10-second slices; a row the recompute no longer finds gets a tombstone
-- (is_deleted = 1), so FINAL keeps exactly the newest recompute. Bulk imports recompute
-- every hour of the study a day at a time.

CREATE TABLE IF NOT EXISTS agg_arrangement_replicates_1h
(
    experiment_id        LowCardinality(String),
    engine               LowCardinality(String),
    hour_start           DateTime('UTC'),
    arm                  LowCardinality(String),
    install_age_days     UInt8,
    identified           UInt8,
    units                UInt64,
    impressions          UInt64,
    clicks               Array(UInt64),
    installs_units       UInt32,
    installs_impressions UInt32,
    rep_units            Array(UInt32) CODEC(T64, ZSTD(3)),
    rep_impressions      Array(UInt32) CODEC(T64, ZSTD(3)),
    rep_clicks           Array(UInt32) CODEC(T64, ZSTD(3)),
    computed_at          DateTime64(6, 'UTC'),
    is_deleted           UInt8 DEFAULT 0
)
ENGINE = ReplacingMergeTree(computed_at, is_deleted)
ORDER BY (experiment_id, engine, identified, install_age_days, arm, hour_start);

-- View defined in views/<name>.sql (applied after the migrations): arrangement_replicates_1h.

-- Existing studies: their hours from the raw rows already stored, the weights computed by
-- ClickHouse (weight_sql of analytics/stats/bootstrap.py, from the install key).
-- It reads raw_extension_events FINAL, what the view extension_events was then: views are
-- created after the migrations (views/), so a migration reads no view.
INSERT INTO agg_arrangement_replicates_1h
    (experiment_id, engine, hour_start, arm, install_age_days, identified, units, impressions, clicks,
     installs_units, installs_impressions, rep_units, rep_impressions, rep_clicks, computed_at)
SELECT experiment_id, engine, hour_start, arm, age, ident, sum(n_units), sum(n_impressions),
       sumForEach(n_clicks), countIf(n_units > 0 AND age = oldest_units),
       countIf(n_impressions > 0 AND age = oldest_impressions),
       sumForEach(arrayMap(w -> w * n_units, arrayMap(u -> multiIf(u < 0.36787944117144233, 0, u < 0.7357588823428847, 1, u < 0.9196986029286058, 2, u < 0.9810118431238463, 3, u < 0.9963401531726563, 4, u < 0.9994058151824183, 5, u < 0.999916758850712, 6, u < 0.9999897508033253, 7, u < 0.999998874797402, 8, 9), arrayMap(r -> (bitXor((bitXor((bitXor((install_key + (toUInt64(r) + 1) * 11400714819323198485), bitShiftRight((install_key + (toUInt64(r) + 1) * 11400714819323198485), 30)) * 13787848793156543929), bitShiftRight((bitXor((install_key + (toUInt64(r) + 1) * 11400714819323198485), bitShiftRight((install_key + (toUInt64(r) + 1) * 11400714819323198485), 30)) * 13787848793156543929), 27)) * 10723151780598845931), bitShiftRight((bitXor((bitXor((install_key + (toUInt64(r) + 1) * 11400714819323198485), bitShiftRight((install_key + (toUInt64(r) + 1) * 11400714819323198485), 30)) * 13787848793156543929), bitShiftRight((bitXor((install_key + (toUInt64(r) + 1) * 11400714819323198485), bitShiftRight((install_key + (toUInt64(r) + 1) * 11400714819323198485), 30)) * 13787848793156543929), 27)) * 10723151780598845931), 31)) / 18446744073709551616.0), range(200))) AS weights)),
       sumForEach(arrayMap(w -> w * n_impressions, weights)),
       sumForEach(arrayFlatten(arrayMap(c -> arrayMap(w -> w * c, weights), n_clicks))),
       now64(6)
FROM
(
    SELECT *,
           max(if(n_units > 0, toInt16(age), -1)) OVER per_install AS oldest_units,
           max(if(n_impressions > 0, toInt16(age), -1)) OVER per_install AS oldest_impressions
    FROM
    (
        SELECT experiment_id, engine, toStartOfHour(received_at) AS hour_start,
               xxHash64(concat('0:', install_id)) AS install_key, arm,
               toUInt8(least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), 7)) AS age,
               toUInt8(identified) AS ident, countIf(type = 'click') AS n_units,
               countIf(type = 'serp_view') AS n_impressions,
               [countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 1), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 2), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 3), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 4), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 5), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 6), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 7), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 8), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 9), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 10)] AS n_clicks
        FROM raw_extension_events FINAL
        GROUP BY experiment_id, engine, hour_start, install_key, arm, age, ident
    )
    WINDOW per_install AS (PARTITION BY experiment_id, engine, hour_start, install_key, arm, ident)
)
GROUP BY experiment_id, engine, hour_start, arm, age, ident
SETTINGS max_bytes_before_external_group_by = 500000000;
