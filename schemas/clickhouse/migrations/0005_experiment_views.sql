-- Analyst views for arrangement experiments: the paper's Figure 3 for any time range,
-- with 95% clustered-bootstrap intervals (parameterised views).

-- Views defined in views/<name>.sql (applied after the migrations): experiment_ctr,
-- experiment_gap.
