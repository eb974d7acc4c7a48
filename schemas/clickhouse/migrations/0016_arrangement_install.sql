-- Per-install arrangement statistics over the whole study: the read side that grows with
-- installs, not with events. One row per experiment, engine, install, arm and the page
-- context the subsets and preprocessing filter on (age capped at 7 days, identified, ads,
-- box, SSR at c1/c2), summed over every 10-second slice of agg_arrangement_10s. After a
-- batch, the rows of every install it touched are recomputed whole from that install's
-- exact slices (a row never disappears, since counts only grow, so ReplacingMergeTree
-- keeps exactly the newest recompute). Reports without a time range, with a burn-in of at
-- most 7 days and a subset other than the n_candidates quintiles read this table; the
-- others read the slices (analytics/reports/experiment.py).

CREATE TABLE IF NOT EXISTS agg_arrangement_install
(
    experiment_id       LowCardinality(String),
    engine              LowCardinality(String),
    install_id          String,
    arm                 LowCardinality(String),
    install_age_days    UInt8,
    identified          UInt8,
    ads_present         UInt8,
    box_present         UInt8,
    ssr_c1_c2           UInt8,
    units               UInt64,
    impressions         UInt64,
    clicks              Array(UInt64),
    clicks_ad           UInt64,
    clicks_box          UInt64,
    clicks_ssr          UInt64,
    clicks_other        UInt64,
    first_slice         DateTime('UTC'),
    last_slice          DateTime('UTC'),
    computed_at         DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (experiment_id, engine, install_id, arm, install_age_days, identified, ads_present,
          box_present, ssr_c1_c2);

-- View defined in views/<name>.sql (applied after the migrations): arrangement_install.

-- Existing studies: their install rows from the slices already stored.
INSERT INTO agg_arrangement_install
SELECT experiment_id, engine, install_id, arm, toUInt8(least(install_age_days, 7)) AS age,
       identified, ads_present, box_present, ssr_c1_c2, sum(units), sum(impressions),
       arrayMap(x -> toUInt64(x), sumForEach(clicks)), sum(clicks_ad), sum(clicks_box),
       sum(clicks_ssr), sum(clicks_other), min(slice_start), max(slice_start), now64(6)
FROM agg_arrangement_10s FINAL
GROUP BY experiment_id, engine, install_id, arm, age, identified, ads_present, box_present,
         ssr_c1_c2;
