-- The share of suggestions naming any social-media platform, per study and root.
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_social_share_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_social_share AS
SELECT engine, study_id, 'trimmed' AS network, root, uniqExact(crawl_id, target) AS suggestions,
       uniqExactIf((crawl_id, target), notEmpty(platforms)) AS social, social / suggestions AS share
FROM autocomplete_study_edges
WHERE kept
GROUP BY engine, study_id, root;
