-- The decision line's stored looks (agg_arrangement_looks), one per complete day, selection
-- and arm; excludes_zero says whether the confidence sequence for delta excluded zero.
CREATE OR REPLACE VIEW arrangement_looks AS
SELECT experiment_id, engine, selection, look_day, arm, installs, delta_low, delta_high,
       (delta_low > 0 OR delta_high < 0) AS excludes_zero, computed_at
FROM agg_arrangement_looks FINAL
WHERE arm != '';
