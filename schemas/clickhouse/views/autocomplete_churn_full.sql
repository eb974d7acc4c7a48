-- Churn per (rank, depth) between a root's consecutive crawls of a study.
-- The full (untrimmed) network; autocomplete_churn is the same on the trimmed one, as the paper analyses it.
CREATE OR REPLACE VIEW autocomplete_churn_full AS
SELECT engine, root, crawl_id, network, previous_crawl_id, completed_at, rank, depth, churn, query_words
FROM agg_autocomplete_churn FINAL
WHERE network = 'full';
