-- Per-install sufficient statistics for the arrangement estimators (DESIGN.md §3.1).
-- Units and clicks per install, arm and page context, first for every 10-second slice
-- of received_at (recomputed from the deduplicated raw rows for the slices a batch
-- touched), then rolled up per day from those exact slices for the installs a batch
-- touched. Preprocessing is a filter at query time, not a deletion: install_age_days
-- (days since install_day) serves the burn-in rule, identified the identification rule.
-- Bootstrap confidence intervals weight these rows per install (streams/stats/bootstrap.py).

CREATE TABLE IF NOT EXISTS agg_arrangement_10s
(
    experiment_id       LowCardinality(String),
    install_id          String,
    slice_start         DateTime('UTC'),
    engine              LowCardinality(String),
    arm                 LowCardinality(String),
    install_age_days    UInt16,
    identified          UInt8,
    ads_present         UInt8,
    box_present         UInt8,
    ssr_c1_c2           UInt8,
    n_candidates_bucket Int16,
    units               UInt32,
    impressions         UInt32,
    clicks              Array(UInt32),
    clicks_ad           UInt32,
    clicks_box          UInt32,
    clicks_ssr          UInt32,
    clicks_other        UInt32,
    computed_at         DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(slice_start)
ORDER BY (experiment_id, install_id, slice_start, engine, arm, install_age_days, identified,
          ads_present, box_present, ssr_c1_c2, n_candidates_bucket);

CREATE TABLE IF NOT EXISTS agg_arrangement_day
(
    experiment_id       LowCardinality(String),
    install_id          String,
    day                 Date,
    engine              LowCardinality(String),
    arm                 LowCardinality(String),
    install_age_days    UInt16,
    identified          UInt8,
    ads_present         UInt8,
    box_present         UInt8,
    ssr_c1_c2           UInt8,
    n_candidates_bucket Int16,
    units               UInt32,
    impressions         UInt32,
    clicks              Array(UInt32),
    clicks_ad           UInt32,
    clicks_box          UInt32,
    clicks_ssr          UInt32,
    clicks_other        UInt32,
    computed_at         DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(day)
ORDER BY (experiment_id, install_id, day, engine, arm, install_age_days, identified,
          ads_present, box_present, ssr_c1_c2, n_candidates_bucket);

-- View defined in views/<name>.sql (applied after the migrations): arrangement_install_day.
