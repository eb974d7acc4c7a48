-- Confidence sequences for the analyst: delta_i per arm against a baseline over the whole
-- study, with the 95% asymptotic confidence sequence clustered by install.

-- View defined in views/<name>.sql (applied after the migrations): experiment_gap_sequential.
