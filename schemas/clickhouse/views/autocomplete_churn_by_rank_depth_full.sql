-- Mean churn per engine, rank and depth.
-- The full (untrimmed) network; autocomplete_churn_by_rank_depth is the same on the trimmed one, as the paper analyses it.
CREATE OR REPLACE VIEW autocomplete_churn_by_rank_depth_full AS
SELECT engine, network, rank, depth, avg(churn) AS mean_churn, count() AS pairs
FROM autocomplete_churn_full
GROUP BY engine, network, rank, depth;
