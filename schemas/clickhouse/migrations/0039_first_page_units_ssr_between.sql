-- Issue 37, departures from the Powermeter paper: three counting rules change, so every
-- derived table of the arrangement experiment is recounted from the deduplicated raw rows.
--
-- 1. Only a first result page counts. The paper's c_i and arrangements exist on the first
--    page only, and its Figure 3's CTRs under control sum to about 0.8 over c1..c6: its
--    population is clicks on first result pages. A click on a later page used to be a unit
--    (counted in clicks_other when organic) whose click was on none of c_1..c_10, lowering
--    every CTR and gap. Now a unit is a first-page click (a first-page serp_view in
--    impression mode), every click column counts first-page clicks, and later pages are
--    kept apart in two new columns, later_units and later_impressions, so the report's
--    preprocessing table shows what the rule removed (later_page_dropped).
-- 2. ssr_c1_c2 is the paper's "an SSR between the first two generic results": with the main
--    column's positions 1..k all specialized, c_1 is shown at k + 1 and the page counts when
--    k + 2 is specialized. It was "a specialized result at position 2", which differs when
--    the column starts with an SSR.
-- 3. A new page subset, ads (ads on top, with or without a box: Figure 4, middle), so the
--    per-subset rows are rebuilt with it.
--
-- The statements are the worker's own recomputes (studies/arrangement/counting.py and
-- write/) over all time, written out; they read raw_extension_events FINAL, what the view
-- extension_events is: views are created after the migrations (views/), so a migration
-- reads no view. The closed sums are rebuilt as 0034 built them, the hourly replicates as
-- 0027 did (with the new unit), and the decision line's stored looks and their totals are
-- dropped: the worker stores them again from the recounted rows (keep_looks).

ALTER TABLE agg_arrangement_10s
    ADD COLUMN IF NOT EXISTS later_units UInt32 DEFAULT 0 AFTER clicks_other,
    ADD COLUMN IF NOT EXISTS later_impressions UInt32 DEFAULT 0 AFTER later_units;

ALTER TABLE agg_arrangement_install
    ADD COLUMN IF NOT EXISTS later_units UInt64 DEFAULT 0 AFTER clicks_other,
    ADD COLUMN IF NOT EXISTS later_impressions UInt64 DEFAULT 0 AFTER later_units;

ALTER TABLE agg_arrangement_install_subset
    ADD COLUMN IF NOT EXISTS later_units UInt64 DEFAULT 0 AFTER clicks_other,
    ADD COLUMN IF NOT EXISTS later_impressions UInt64 DEFAULT 0 AFTER later_units;

ALTER TABLE agg_arrangement_install_closed
    ADD COLUMN IF NOT EXISTS later_units UInt64 DEFAULT 0 AFTER clicks_other,
    ADD COLUMN IF NOT EXISTS later_impressions UInt64 DEFAULT 0 AFTER later_units;

TRUNCATE TABLE IF EXISTS agg_clicks_by_rank_10s;

TRUNCATE TABLE IF EXISTS agg_arrangement_10s;

TRUNCATE TABLE IF EXISTS agg_arrangement_install;

TRUNCATE TABLE IF EXISTS agg_arrangement_install_subset;

TRUNCATE TABLE IF EXISTS agg_arrangement_install_closed;

TRUNCATE TABLE IF EXISTS agg_arrangement_replicates_1h;

TRUNCATE TABLE IF EXISTS agg_arrangement_look_totals;

TRUNCATE TABLE IF EXISTS agg_arrangement_looks;

INSERT INTO agg_clicks_by_rank_10s
    (experiment_id, engine, arm, original_rank, window_start, units, impressions, clicks,
     computed_at)
SELECT experiment_id, engine, arm, r, ws, n_units, n_impressions, n_clicks[r], now64(6)
FROM
(
    SELECT experiment_id, engine, arm,
           toStartOfInterval(received_at, INTERVAL 10 SECOND) AS ws,
           countIf(type = 'click' AND page_index = 0) AS n_units,
           countIf(type = 'serp_view' AND page_index = 0) AS n_impressions,
           [countIf(type = 'click' AND page_index = 0 AND original_rank = 1), countIf(type = 'click' AND page_index = 0 AND original_rank = 2), countIf(type = 'click' AND page_index = 0 AND original_rank = 3), countIf(type = 'click' AND page_index = 0 AND original_rank = 4), countIf(type = 'click' AND page_index = 0 AND original_rank = 5), countIf(type = 'click' AND page_index = 0 AND original_rank = 6), countIf(type = 'click' AND page_index = 0 AND original_rank = 7), countIf(type = 'click' AND page_index = 0 AND original_rank = 8), countIf(type = 'click' AND page_index = 0 AND original_rank = 9), countIf(type = 'click' AND page_index = 0 AND original_rank = 10)] AS n_clicks
    FROM raw_extension_events FINAL
    WHERE received_at >= toDateTime64(0, 3, 'UTC')
      AND received_at < toDateTime64(4102444800, 3, 'UTC')
      AND 1
    GROUP BY experiment_id, engine, arm, ws
)
ARRAY JOIN range(1, 11) AS r;

INSERT INTO agg_arrangement_10s (experiment_id, install_id, slice_start, engine, arm, install_age_days, identified, ads_present, box_present, ssr_c1_c2, n_candidates_bucket, units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, later_units, later_impressions, computed_at)
SELECT experiment_id, install_id, toStartOfInterval(received_at, INTERVAL 10 SECOND) AS ws,
       engine, arm,
       toUInt16(least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), 65535)) AS age,
       toUInt8(identified) AS ident,
       toUInt8(ads_top_count > 0) AS ads, toUInt8(box != 'none') AS boxp,
       toUInt8(has(ssr_positions, arrayFirstIndex(p -> NOT has(ssr_positions, p), range(1, 22)) + 1)) AS ssr12,
       if(n_candidates IS NULL OR n_candidates = 0, -1, toInt16(floor(log10(n_candidates) * 10))) AS ncb,
       toUInt32(countIf(type = 'click' AND page_index = 0)), toUInt32(countIf(type = 'serp_view' AND page_index = 0)),
       [toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 1)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 2)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 3)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 4)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 5)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 6)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 7)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 8)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 9)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 10))],
       toUInt32(countIf(type = 'click' AND page_index = 0 AND element_type = 'ad')), toUInt32(countIf(type = 'click' AND page_index = 0 AND element_type = 'shopping_box')), toUInt32(countIf(type = 'click' AND page_index = 0 AND element_type = 'ssr')), toUInt32(countIf(type = 'click' AND page_index = 0 AND element_type = 'other')),
       toUInt32(countIf(type = 'click' AND page_index > 0)), toUInt32(countIf(type = 'serp_view' AND page_index > 0)),
       now64(6)
FROM raw_extension_events FINAL
WHERE received_at >= toDateTime64(0, 3, 'UTC') AND received_at < toDateTime64(4102444800, 3, 'UTC')
  AND 1
GROUP BY experiment_id, install_id, ws, engine, arm, age, ident, ads, boxp, ssr12, ncb;

INSERT INTO agg_arrangement_install (experiment_id, engine, install_id, arm, install_age_days, identified, ads_present, box_present, ssr_c1_c2, units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, later_units, later_impressions, first_slice, last_slice, computed_at)
SELECT experiment_id, engine, install_id, arm,
       toUInt8(least(install_age_days, 7)) AS age, identified, ads_present, box_present,
       ssr_c1_c2, sum(units), sum(impressions), arrayMap(x -> toUInt64(x), sumForEach(clicks)),
       sum(clicks_ad), sum(clicks_box), sum(clicks_ssr), sum(clicks_other),
       sum(later_units), sum(later_impressions), min(slice_start), max(slice_start), now64(6)
FROM agg_arrangement_10s FINAL
WHERE 1
GROUP BY experiment_id, engine, install_id, arm, age, identified, ads_present, box_present, ssr_c1_c2;

INSERT INTO agg_arrangement_install_subset (experiment_id, engine, subset, install_id, arm, install_age_days, identified, units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, later_units, later_impressions, computed_at)
SELECT experiment_id, engine, subset, install_id, arm, install_age_days, identified,
       sum(units), sum(impressions), arrayMap(x -> toUInt64(x), sumForEach(clicks)),
       sum(clicks_ad), sum(clicks_box), sum(clicks_ssr), sum(clicks_other), sum(later_units),
       sum(later_impressions), now64(6)
FROM agg_arrangement_install FINAL
ARRAY JOIN arrayMap(s -> s.1, arrayFilter(s -> s.2 = 1, [('all', toUInt8(1)), ('ads_or_box', toUInt8((ads_present = 1 OR box_present = 1))), ('no_ads_no_box', toUInt8((ads_present = 0 AND box_present = 0))), ('box', toUInt8(box_present = 1)), ('ssr_c1_c2', toUInt8(ssr_c1_c2 = 1)), ('ads_no_box', toUInt8((ads_present = 1 AND box_present = 0))), ('no_ssr_c1_c2', toUInt8(ssr_c1_c2 = 0)), ('ads', toUInt8(ads_present = 1))])) AS subset
WHERE 1
GROUP BY experiment_id, engine, subset, install_id, arm, install_age_days, identified;

INSERT INTO agg_arrangement_install_closed
    (experiment_id, engine, install_id, arm, install_age_days, identified, ads_present, box_present,
     ssr_c1_c2, units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other,
     later_units, later_impressions, first_slice, last_slice, through, stale, computed_at)
SELECT * FROM
(
    SELECT s.experiment_id AS experiment_id, s.engine AS engine, s.install_id AS install_id,
           s.arm AS arm, toUInt8(least(s.install_age_days, 7)) AS age, s.identified AS identified,
           s.ads_present AS ads_present, s.box_present AS box_present, s.ssr_c1_c2 AS ssr_c1_c2,
           sum(s.units), sum(s.impressions), arrayMap(x -> toUInt64(x), sumForEach(s.clicks)),
           sum(s.clicks_ad), sum(s.clicks_box), sum(s.clicks_ssr), sum(s.clicks_other),
           sum(s.later_units), sum(s.later_impressions),
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
           toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0), toDateTime(0, 'UTC'),
           toDateTime(0, 'UTC'), b.through, toUInt8(0), now64(6)
    FROM agg_arrangement_10s AS s
    INNER JOIN
    (
        SELECT experiment_id, engine, toStartOfDay(max(slice_start) - INTERVAL 1 HOUR) AS through
        FROM agg_arrangement_10s GROUP BY experiment_id, engine
    ) AS b ON b.experiment_id = s.experiment_id AND b.engine = s.engine
)
SETTINGS max_bytes_before_external_group_by = 500000000;

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
               toUInt8(identified) AS ident, countIf(type = 'click' AND page_index = 0) AS n_units,
               countIf(type = 'serp_view' AND page_index = 0) AS n_impressions,
               [countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 1), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 2), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 3), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 4), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 5), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 6), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 7), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 8), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 9), countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 10)] AS n_clicks
        FROM raw_extension_events FINAL
        GROUP BY experiment_id, engine, hour_start, install_key, arm, age, ident
    )
    WINDOW per_install AS (PARTITION BY experiment_id, engine, hour_start, install_key, arm, ident)
)
GROUP BY experiment_id, engine, hour_start, arm, age, ident
SETTINGS max_bytes_before_external_group_by = 500000000;
