-- The share of suggestions naming any social-media platform, per study and root.
-- The full (untrimmed) network; autocomplete_social_share is the same on the trimmed one, as the paper analyses it.
CREATE OR REPLACE VIEW autocomplete_social_share_full AS
SELECT engine, study_id, 'full' AS network, root, uniqExact(crawl_id, target) AS suggestions,
       uniqExactIf((crawl_id, target), notEmpty(platforms)) AS social, social / suggestions AS share
FROM autocomplete_study_edges
GROUP BY engine, study_id, root;
