-- The study-wide per-install rows (agg_arrangement_install): one per experiment, engine,
-- install, arm and page context, summed over every slice of the install. install_age_days
-- here is min(days since install, 7): 7 means "seven days or more". The page's frozen
-- n_candidates quintiles (migration 0042) are 0 unless the experiment's plan froze them.
CREATE OR REPLACE VIEW arrangement_install AS
SELECT experiment_id, engine, install_id, arm, install_age_days, identified, ads_present,
       box_present, ssr_c1_c2, n_candidates_quintile, no_ads_no_box_quintile, units, impressions,
       clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, first_slice, last_slice,
       later_units, later_impressions
FROM agg_arrangement_install FINAL;
