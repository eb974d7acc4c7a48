-- Per-install sufficient statistics of arrangement experiments: one install's counts for one
-- 10-second slice (slice_start) and page context, read from the exact slices of
-- agg_arrangement_10s, so sum rows. day is the slice's UTC day; the columns are those of the
-- daily roll-up it replaced (migration 0012), in the same order, plus slice_start, and the
-- later-page clicks and views the first-page rule leaves out (migration 0039).
CREATE OR REPLACE VIEW arrangement_install_day AS
SELECT experiment_id, install_id, toDate(slice_start) AS day, engine, arm, install_age_days,
       identified, ads_present, box_present, ssr_c1_c2, n_candidates_bucket, units,
       impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, slice_start,
       later_units, later_impressions
FROM agg_arrangement_10s FINAL;
