-- The per-hour point and bootstrap replicate sums behind `report timeline --window 1h`
-- (agg_arrangement_replicates_1h; FINAL also drops the rows a recompute deleted).
CREATE OR REPLACE VIEW arrangement_replicates_1h AS
SELECT experiment_id, engine, hour_start, arm, install_age_days, identified, units, impressions,
       clicks, installs_units, installs_impressions, rep_units, rep_impressions, rep_clicks
FROM agg_arrangement_replicates_1h FINAL;
