-- The study-wide per-install rows per named page subset (agg_arrangement_install_subset;
-- analytics/stats/arrangement_subsets.py): one per install, arm, age (capped at 7) and
-- identified.
CREATE OR REPLACE VIEW arrangement_install_subset AS
SELECT experiment_id, engine, subset, install_id, arm, install_age_days, identified, units,
       impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, later_units,
       later_impressions
FROM agg_arrangement_install_subset FINAL;
