-- The association network per study and root (reduced n-grams with memory): edge
-- weights and the crawls they were seen in.
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_associations_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_associations AS
SELECT a.engine AS engine, c.study_id AS study_id, a.network AS network, a.root AS root,
       a.source_reduced AS source_reduced, a.target_reduced AS target_reduced,
       sum(a.edges) AS weight, uniqExact(a.crawl_id) AS crawls
FROM agg_autocomplete_associations AS a FINAL
INNER JOIN autocomplete_crawl_studies AS c
ON a.engine = c.engine AND a.root = c.root AND a.crawl_id = c.crawl_id
WHERE a.network = 'trimmed'
GROUP BY engine, study_id, network, root, source_reduced, target_reduced;
