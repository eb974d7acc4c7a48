-- One row per analysed crawl of a root, with nmi against the root's previous crawl of the
-- same study (NULL for its first).
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_crawls_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_crawls AS
SELECT engine, root, crawl_id, study_id, network, completed_at, previous_crawl_id, n_nodes, n_edges,
       n_failed, n_blocked, max_depth, trimming_rule, net_nodes, net_edges, nmi
FROM agg_autocomplete_crawls FINAL
WHERE network = 'trimmed';
