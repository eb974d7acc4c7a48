-- Each edge with its crawl's study; an edge of a crawl not analysed yet has none and is left out.
CREATE OR REPLACE VIEW autocomplete_study_edges AS
SELECT e.engine AS engine, c.study_id AS study_id, e.root AS root, e.crawl_id AS crawl_id,
       e.completed_at AS completed_at, e.target AS target, e.kept AS kept, e.platforms AS platforms
FROM agg_autocomplete_edges AS e FINAL
INNER JOIN autocomplete_crawl_studies AS c
ON e.engine = c.engine AND e.root = c.root AND e.crawl_id = c.crawl_id;
