-- Study-wide per-install rows per page subset (issue 15: the report's read side grows with
-- installs, not events). agg_arrangement_install keeps one row per install, arm and page
-- context (age, identified, ads, box, SSR at c1/c2: up to 48 per install and arm), and a
-- report grouped them per install at read time, so its scan grew with the contexts each
-- install had met, toward the number of events. This table keeps, for each named subset
-- (analytics/stats/arrangement_subsets.py: all, ads_or_box, no_ads_no_box, box, ssr_c1_c2,
-- ads_no_box, no_ssr_c1_c2), one row per install, arm, age (capped at 7) and identified:
-- a report of one subset reads at most (arms x ages) rows per install. The worker rebuilds
-- a touched install's rows from its agg_arrangement_install rows right after those
-- (streams/recompute/arrangement_stats.py: subsets_sql); keys only ever gain rows, so
-- ReplacingMergeTree keeps exactly the newest recompute. `report experiment` reads it for
-- the whole study with a burn-in of 0-7 days (analytics/reports/experiment.py).

CREATE TABLE IF NOT EXISTS agg_arrangement_install_subset
(
    experiment_id    LowCardinality(String),
    engine           LowCardinality(String),
    subset           LowCardinality(String),
    install_id       String,
    arm              LowCardinality(String),
    install_age_days UInt8,
    identified       UInt8,
    units            UInt64,
    impressions      UInt64,
    clicks           Array(UInt64),
    clicks_ad        UInt64,
    clicks_box       UInt64,
    clicks_ssr       UInt64,
    clicks_other     UInt64,
    computed_at      DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (experiment_id, engine, subset, install_id, arm, install_age_days, identified);

-- View defined in views/<name>.sql (applied after the migrations):
-- arrangement_install_subset.

-- Existing studies: their subset rows from the study-wide rows already stored.
INSERT INTO agg_arrangement_install_subset
SELECT experiment_id, engine, subset, install_id, arm, install_age_days, identified,
       sum(units), sum(impressions), arrayMap(x -> toUInt64(x), sumForEach(clicks)),
       sum(clicks_ad), sum(clicks_box), sum(clicks_ssr), sum(clicks_other), now64(6)
FROM agg_arrangement_install FINAL
ARRAY JOIN arrayMap(s -> s.1, arrayFilter(s -> s.2 = 1, [('all', toUInt8(1)), ('ads_or_box', toUInt8((ads_present = 1 OR box_present = 1))), ('no_ads_no_box', toUInt8((ads_present = 0 AND box_present = 0))), ('box', toUInt8(box_present = 1)), ('ssr_c1_c2', toUInt8(ssr_c1_c2 = 1)), ('ads_no_box', toUInt8((ads_present = 1 AND box_present = 0))), ('no_ssr_c1_c2', toUInt8(ssr_c1_c2 = 0))])) AS subset
GROUP BY experiment_id, engine, subset, install_id, arm, install_age_days, identified;
