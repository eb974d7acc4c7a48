-- Per-install sums through closed days (issue 34: the worker's work per batch no longer
-- grows with the study's age). agg_arrangement_install keeps, per install and page context,
-- sums over all of the install's 10-second slices; after every batch the worker recomputed
-- a touched install's rows from all of its slices, thousands for a volunteer of a long
-- study. This table keeps the same sums over the install's slices before `through`, a UTC
-- day boundary (the day of the newest slice of its experiment and engine, less an hour, so
-- a day closes an hour after it ends). The worker now recomputes only the page contexts a
-- batch touched, each as these sums plus the install's slices from `through` on (a day or
-- two of them), and moves `through` forward a day at a time
-- (streams/recompute/arrangement_closed.py).
--
-- One install's rows are one set, written by one statement, every row with the set's
-- `through` and `computed_at`; the row with arm = '' (and every other context column 0) is
-- the set's header. A set is used only when it is whole (every row has the header's
-- computed_at), its header is not `stale`, and the batch touched none of the install's
-- slices before `through`; otherwise the install is recomputed whole from its slices and
-- its set rebuilt. A bulk import marks every install of a day it recomputes stale (a
-- header with stale = 1) before and after it recomputes that day's slices, and then
-- rebuilds the stale installs. Keys only gain rows and `through` never goes back, so a new
-- set replaces every row of the one before it (ReplacingMergeTree keeps the newest).
-- Small granules: a batch reads a few hundred rows of each install it touched.

CREATE TABLE IF NOT EXISTS agg_arrangement_install_closed
(
    experiment_id    LowCardinality(String),
    engine           LowCardinality(String),
    install_id       String,
    arm              LowCardinality(String),
    install_age_days UInt8,
    identified       UInt8,
    ads_present      UInt8,
    box_present      UInt8,
    ssr_c1_c2        UInt8,
    units            UInt64,
    impressions      UInt64,
    clicks           Array(UInt64),
    clicks_ad        UInt64,
    clicks_box       UInt64,
    clicks_ssr       UInt64,
    clicks_other     UInt64,
    first_slice      DateTime('UTC'),
    last_slice       DateTime('UTC'),
    through          DateTime('UTC'),
    stale            UInt8,
    computed_at      DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (experiment_id, engine, install_id, arm, install_age_days, identified, ads_present,
          box_present, ssr_c1_c2)
SETTINGS index_granularity = 256;

-- Existing studies: every install's set from the slices already stored, in one statement
-- (one computed_at for the rows and the headers). Applied again, it writes the same sets
-- with a newer stamp.
INSERT INTO agg_arrangement_install_closed
SELECT * FROM
(
    SELECT s.experiment_id AS experiment_id, s.engine AS engine, s.install_id AS install_id,
           s.arm AS arm, toUInt8(least(s.install_age_days, 7)) AS age, s.identified AS identified,
           s.ads_present AS ads_present, s.box_present AS box_present, s.ssr_c1_c2 AS ssr_c1_c2,
           sum(s.units), sum(s.impressions), arrayMap(x -> toUInt64(x), sumForEach(s.clicks)),
           sum(s.clicks_ad), sum(s.clicks_box), sum(s.clicks_ssr), sum(s.clicks_other),
           min(s.slice_start), max(s.slice_start), any(b.through), toUInt8(0), now64(6)
    FROM agg_arrangement_10s AS s FINAL
    INNER JOIN
    (
        SELECT experiment_id, engine, toStartOfDay(max(slice_start) - INTERVAL 1 HOUR) AS through
        FROM agg_arrangement_10s GROUP BY experiment_id, engine
    ) AS b ON b.experiment_id = s.experiment_id AND b.engine = s.engine
    WHERE s.slice_start < b.through
    GROUP BY experiment_id, engine, install_id, arm, age, identified, ads_present, box_present,
             ssr_c1_c2
    UNION ALL
    SELECT DISTINCT s.experiment_id, s.engine, s.install_id, '', toUInt8(0), toUInt8(0), toUInt8(0),
           toUInt8(0), toUInt8(0), toUInt64(0), toUInt64(0), CAST([], 'Array(UInt64)'), toUInt64(0),
           toUInt64(0), toUInt64(0), toUInt64(0), toDateTime(0, 'UTC'), toDateTime(0, 'UTC'),
           b.through, toUInt8(0), now64(6)
    FROM agg_arrangement_10s AS s
    INNER JOIN
    (
        SELECT experiment_id, engine, toStartOfDay(max(slice_start) - INTERVAL 1 HOUR) AS through
        FROM agg_arrangement_10s GROUP BY experiment_id, engine
    ) AS b ON b.experiment_id = s.experiment_id AND b.engine = s.engine
)
SETTINGS max_bytes_before_external_group_by = 500000000;
