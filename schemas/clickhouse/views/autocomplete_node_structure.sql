-- One row per node of a crawl's network (analytics/stats/autocomplete_structure.py):
-- depth, rank, degrees, merge point, words and length changes; crawls with failed nodes have
-- none.
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_node_structure_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_node_structure AS
SELECT engine, root, crawl_id, study_id, network, completed_at, node, depth, rank, submitted,
       n_suggestions, k_in, k_out, k_in > 1 AS merge_point, words, length_changes
FROM agg_autocomplete_structure FINAL
WHERE network = 'trimmed';
