-- One row per analysed crawl of a root, with nmi against the root's previous crawl of the
-- same study (NULL for its first): nmi is RAI's Equation 3 (2 I / (H_t + H_t+1); NULL too for
-- crawls analysed before migration 0040), nmi_pooled the earlier reading 1 - JSD / ln 2.
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_crawls_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_crawls AS
SELECT engine, root, crawl_id, study_id, network, completed_at, previous_crawl_id, n_nodes, n_edges,
       n_failed, n_blocked, max_depth, trimming_rule, net_nodes, net_edges,
       c.nmi_eq3 AS nmi, c.nmi AS nmi_pooled
FROM agg_autocomplete_crawls AS c FINAL
WHERE network = 'trimmed';
