-- arrangement_install_day reads the exact 10-second slices directly; the daily roll-up
-- table agg_arrangement_day is dropped. Its rows were keyed by install, day and page
-- context, and the context (arm, ads, box, SSR, n_candidates bucket, ...) differs from
-- page to page, so it held about as many rows as the slices (122k against 124k for 200k
-- events) while costing a second recompute after every batch. The view keeps every
-- column it had, in the same order, and adds slice_start: a row is one install's counts
-- for one 10-second slice and page context, so sum rows, as before.

CREATE OR REPLACE VIEW arrangement_install_day AS
SELECT experiment_id, install_id, toDate(slice_start) AS day, engine, arm, install_age_days,
       identified, ads_present, box_present, ssr_c1_c2, n_candidates_bucket, units,
       impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, slice_start
FROM agg_arrangement_10s FINAL;

DROP TABLE IF EXISTS agg_arrangement_day;
