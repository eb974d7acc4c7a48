-- The study of each analysed crawl (its crawl row is written last).
CREATE OR REPLACE VIEW autocomplete_crawl_studies AS
SELECT engine, root, crawl_id, any(study_id) AS study_id
FROM agg_autocomplete_crawls
WHERE network = 'trimmed'
GROUP BY engine, root, crawl_id;
