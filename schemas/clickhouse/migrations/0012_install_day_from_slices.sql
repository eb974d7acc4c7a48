-- arrangement_install_day reads the exact 10-second slices directly (views/); the daily
-- roll-up table agg_arrangement_day is dropped. Its rows were keyed by install, day and page
-- context, and the context (arm, ads, box, SSR, n_candidates bucket, ...) differs from
-- page to page, so it held about as many rows as the slices (122k against 124k for 200k
-- events) while costing a second recompute after every batch. The view keeps every
-- column it had, in the same order, and adds slice_start: a row is one install's counts
-- for one 10-second slice and page context, so sum rows, as before.

-- View defined in views/<name>.sql (applied after the migrations): arrangement_install_day.

DROP TABLE IF EXISTS agg_arrangement_day;
