-- Two more subsets of the paper (Figures 4 and 6) in the analyst views of 0015 and 0017:
-- ads_no_box (ads on top, no shopping box) and no_ssr_c1_c2 (no specialized result at
-- position 2, between c1 and c2). Parameters and columns are unchanged; `report experiment
-- --subset` takes the same names. The weight thresholds are P(W <= k) for W ~ Poisson(1)
-- (checked by a test).

-- Views defined in views/<name>.sql (applied after the migrations): experiment_ctr,
-- experiment_gap, experiment_ctr_windows, experiment_gap_sequential.
