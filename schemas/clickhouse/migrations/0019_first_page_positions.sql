-- Only a first result page defines positions c_1..c_10: an organic click on a later page
-- (page_index > 0) used to count at its rank as if it were on the first page. Now it is a
-- unit whose click is on none of c_1..c_10, counted with clicks_other, in the minute
-- aggregate, the 10-second slices and the study-wide rows. The three are rebuilt from the
-- deduplicated raw rows with the worker's own recompute statements (over all time).
-- They read raw_extension_events FINAL, what the view extension_events was then: views are
-- created after the migrations (views/), so a migration reads no view.

TRUNCATE TABLE IF EXISTS agg_clicks_by_rank_10s;

TRUNCATE TABLE IF EXISTS agg_arrangement_10s;

TRUNCATE TABLE IF EXISTS agg_arrangement_install;

INSERT INTO agg_clicks_by_rank_10s
    (experiment_id, engine, arm, original_rank, window_start, units, impressions, clicks,
     computed_at)
SELECT experiment_id, engine, arm, r, ws, n_units, n_impressions, n_clicks[r], now64(6)
FROM
(
    SELECT experiment_id, engine, arm,
           toStartOfInterval(received_at, INTERVAL 10 SECOND) AS ws,
           countIf(type = 'click') AS n_units,
           countIf(type = 'serp_view') AS n_impressions,
           [countIf(type = 'click' AND page_index = 0 AND original_rank = 1), countIf(type = 'click' AND page_index = 0 AND original_rank = 2), countIf(type = 'click' AND page_index = 0 AND original_rank = 3), countIf(type = 'click' AND page_index = 0 AND original_rank = 4), countIf(type = 'click' AND page_index = 0 AND original_rank = 5), countIf(type = 'click' AND page_index = 0 AND original_rank = 6), countIf(type = 'click' AND page_index = 0 AND original_rank = 7), countIf(type = 'click' AND page_index = 0 AND original_rank = 8), countIf(type = 'click' AND page_index = 0 AND original_rank = 9), countIf(type = 'click' AND page_index = 0 AND original_rank = 10)] AS n_clicks
    FROM raw_extension_events FINAL
    WHERE received_at >= toDateTime64(0, 3, 'UTC')
      AND received_at < toDateTime64(4102444800, 3, 'UTC')
      AND 1
    GROUP BY experiment_id, engine, arm, ws
)
ARRAY JOIN range(1, 11) AS r;

INSERT INTO agg_arrangement_10s (experiment_id, install_id, slice_start, engine, arm, install_age_days, identified, ads_present, box_present, ssr_c1_c2, n_candidates_bucket, units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, computed_at)
SELECT experiment_id, install_id, toStartOfInterval(received_at, INTERVAL 10 SECOND) AS ws,
       engine, arm,
       toUInt16(least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), 65535)) AS age,
       toUInt8(identified) AS ident,
       toUInt8(ads_top_count > 0) AS ads, toUInt8(box != 'none') AS boxp,
       toUInt8(has(ssr_positions, 2)) AS ssr12,
       if(n_candidates IS NULL OR n_candidates = 0, -1, toInt16(floor(log10(n_candidates) * 10))) AS ncb,
       toUInt32(countIf(type = 'click')), toUInt32(countIf(type = 'serp_view')),
       [toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 1)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 2)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 3)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 4)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 5)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 6)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 7)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 8)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 9)), toUInt32(countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = 10))],
       toUInt32(countIf(type = 'click' AND element_type = 'ad')),
       toUInt32(countIf(type = 'click' AND element_type = 'shopping_box')),
       toUInt32(countIf(type = 'click' AND element_type = 'ssr')),
       toUInt32(countIf(type = 'click' AND (element_type = 'other'
                        OR (element_type = 'organic' AND page_index > 0)))),
       now64(6)
FROM raw_extension_events FINAL
WHERE received_at >= toDateTime64(0, 3, 'UTC') AND received_at < toDateTime64(4102444800, 3, 'UTC')
  AND 1
GROUP BY experiment_id, install_id, ws, engine, arm, age, ident, ads, boxp, ssr12, ncb;

INSERT INTO agg_arrangement_install (experiment_id, engine, install_id, arm, install_age_days, identified, ads_present, box_present, ssr_c1_c2, units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, first_slice, last_slice, computed_at)
SELECT experiment_id, engine, install_id, arm,
       toUInt8(least(install_age_days, 7)) AS age, identified, ads_present, box_present,
       ssr_c1_c2, sum(units), sum(impressions), arrayMap(x -> toUInt64(x), sumForEach(clicks)),
       sum(clicks_ad), sum(clicks_box), sum(clicks_ssr), sum(clicks_other),
       min(slice_start), max(slice_start), now64(6)
FROM agg_arrangement_10s FINAL
WHERE 1
GROUP BY experiment_id, engine, install_id, arm, age, identified, ads_present, box_present, ssr_c1_c2;
