-- Churn per (rank, depth) between a root's consecutive crawls of a study.
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_churn_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_churn AS
SELECT engine, root, crawl_id, network, previous_crawl_id, completed_at, rank, depth, churn, query_words
FROM agg_autocomplete_churn FINAL
WHERE network = 'trimmed';
