-- CTR per position and arm in consecutive time windows with a 95% clustered-bootstrap
-- interval per window: the live view of a running study.

-- View defined in views/<name>.sql (applied after the migrations): experiment_ctr_windows.
