-- Mean churn per engine, rank and depth.
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_churn_by_rank_depth_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_churn_by_rank_depth AS
SELECT engine, network, rank, depth, avg(churn) AS mean_churn, count() AS pairs
FROM autocomplete_churn
GROUP BY engine, network, rank, depth;
