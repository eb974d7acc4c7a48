-- Social media (paper §4.2): suggestions naming each platform per study and root; a
-- suggestion is a distinct (crawl, suggestion) pair.
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_social_mentions_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_social_mentions AS
SELECT m.engine AS engine, m.study_id AS study_id, 'trimmed' AS network, m.root AS root,
       m.platform AS platform, m.mentions AS mentions, s.suggestions AS suggestions,
       m.mentions / s.suggestions AS share
FROM (SELECT engine, study_id, root, platform, uniqExact(crawl_id, target) AS mentions
      FROM autocomplete_study_edges ARRAY JOIN platforms AS platform
      WHERE kept GROUP BY engine, study_id, root, platform) AS m
INNER JOIN (SELECT engine, study_id, root, uniqExact(crawl_id, target) AS suggestions
            FROM autocomplete_study_edges WHERE kept GROUP BY engine, study_id, root) AS s
ON m.engine = s.engine AND m.study_id = s.study_id AND m.root = s.root;
