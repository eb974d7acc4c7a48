-- The views that pool a root's crawls (survival, associations, social media) pooled every
-- study of that root into one row: a replication or a second audit of the same root could
-- not be told apart from the first, while crawls, churn chains and shocks are per study
-- already. They now group by `study_id` too (the crawl's, from its analysed crawl row, so
-- only analysed crawls count, as before: that row is written last). Summing over studies
-- gives the old pooled `weight`, `crawls`, `mentions` and `suggestions`; `days` is per
-- study. No data changes.

DROP VIEW IF EXISTS autocomplete_survival;

DROP VIEW IF EXISTS autocomplete_survival_full;

DROP VIEW IF EXISTS autocomplete_associations;

DROP VIEW IF EXISTS autocomplete_associations_full;

DROP VIEW IF EXISTS autocomplete_social_mentions;

DROP VIEW IF EXISTS autocomplete_social_mentions_full;

DROP VIEW IF EXISTS autocomplete_social_share;

DROP VIEW IF EXISTS autocomplete_social_share_full;

-- The study of each analysed crawl (its crawl row is written last).
CREATE VIEW IF NOT EXISTS autocomplete_crawl_studies AS
SELECT engine, root, crawl_id, any(study_id) AS study_id
FROM agg_autocomplete_crawls
WHERE network = 'trimmed'
GROUP BY engine, root, crawl_id;

-- Each edge with its crawl's study; an edge of a crawl not analysed yet has none and is left out.
CREATE VIEW IF NOT EXISTS autocomplete_study_edges AS
SELECT e.engine AS engine, c.study_id AS study_id, e.root AS root, e.crawl_id AS crawl_id,
       e.completed_at AS completed_at, e.target AS target, e.kept AS kept, e.platforms AS platforms
FROM agg_autocomplete_edges AS e FINAL
INNER JOIN autocomplete_crawl_studies AS c
ON e.engine = c.engine AND e.root = c.root AND e.crawl_id = c.crawl_id;

CREATE VIEW IF NOT EXISTS autocomplete_survival AS
SELECT engine, study_id, 'trimmed' AS network, root, target AS suggestion,
       min(completed_at) AS first_seen, max(completed_at) AS last_seen,
       uniqExact(toDate(completed_at)) AS days
FROM autocomplete_study_edges
WHERE kept
GROUP BY engine, study_id, root, suggestion;

CREATE VIEW IF NOT EXISTS autocomplete_survival_full AS
SELECT engine, study_id, 'full' AS network, root, target AS suggestion,
       min(completed_at) AS first_seen, max(completed_at) AS last_seen,
       uniqExact(toDate(completed_at)) AS days
FROM autocomplete_study_edges
GROUP BY engine, study_id, root, suggestion;

CREATE VIEW IF NOT EXISTS autocomplete_associations AS
SELECT a.engine AS engine, c.study_id AS study_id, a.network AS network, a.root AS root,
       a.source_reduced AS source_reduced, a.target_reduced AS target_reduced,
       sum(a.edges) AS weight, uniqExact(a.crawl_id) AS crawls
FROM agg_autocomplete_associations AS a FINAL
INNER JOIN autocomplete_crawl_studies AS c
ON a.engine = c.engine AND a.root = c.root AND a.crawl_id = c.crawl_id
WHERE a.network = 'trimmed'
GROUP BY engine, study_id, network, root, source_reduced, target_reduced;

CREATE VIEW IF NOT EXISTS autocomplete_associations_full AS
SELECT a.engine AS engine, c.study_id AS study_id, a.network AS network, a.root AS root,
       a.source_reduced AS source_reduced, a.target_reduced AS target_reduced,
       sum(a.edges) AS weight, uniqExact(a.crawl_id) AS crawls
FROM agg_autocomplete_associations AS a FINAL
INNER JOIN autocomplete_crawl_studies AS c
ON a.engine = c.engine AND a.root = c.root AND a.crawl_id = c.crawl_id
WHERE a.network = 'full'
GROUP BY engine, study_id, network, root, source_reduced, target_reduced;

-- Social media (paper §4.2): a suggestion is a distinct (crawl, suggestion) pair.
CREATE VIEW IF NOT EXISTS autocomplete_social_mentions AS
SELECT m.engine AS engine, m.study_id AS study_id, 'trimmed' AS network, m.root AS root,
       m.platform AS platform, m.mentions AS mentions, s.suggestions AS suggestions,
       m.mentions / s.suggestions AS share
FROM (SELECT engine, study_id, root, platform, uniqExact(crawl_id, target) AS mentions
      FROM autocomplete_study_edges ARRAY JOIN platforms AS platform
      WHERE kept GROUP BY engine, study_id, root, platform) AS m
INNER JOIN (SELECT engine, study_id, root, uniqExact(crawl_id, target) AS suggestions
            FROM autocomplete_study_edges WHERE kept GROUP BY engine, study_id, root) AS s
ON m.engine = s.engine AND m.study_id = s.study_id AND m.root = s.root;

CREATE VIEW IF NOT EXISTS autocomplete_social_mentions_full AS
SELECT m.engine AS engine, m.study_id AS study_id, 'full' AS network, m.root AS root,
       m.platform AS platform, m.mentions AS mentions, s.suggestions AS suggestions,
       m.mentions / s.suggestions AS share
FROM (SELECT engine, study_id, root, platform, uniqExact(crawl_id, target) AS mentions
      FROM autocomplete_study_edges ARRAY JOIN platforms AS platform
      GROUP BY engine, study_id, root, platform) AS m
INNER JOIN (SELECT engine, study_id, root, uniqExact(crawl_id, target) AS suggestions
            FROM autocomplete_study_edges GROUP BY engine, study_id, root) AS s
ON m.engine = s.engine AND m.study_id = s.study_id AND m.root = s.root;

CREATE VIEW IF NOT EXISTS autocomplete_social_share AS
SELECT engine, study_id, 'trimmed' AS network, root, uniqExact(crawl_id, target) AS suggestions,
       uniqExactIf((crawl_id, target), notEmpty(platforms)) AS social, social / suggestions AS share
FROM autocomplete_study_edges
WHERE kept
GROUP BY engine, study_id, root;

CREATE VIEW IF NOT EXISTS autocomplete_social_share_full AS
SELECT engine, study_id, 'full' AS network, root, uniqExact(crawl_id, target) AS suggestions,
       uniqExactIf((crawl_id, target), notEmpty(platforms)) AS social, social / suggestions AS share
FROM autocomplete_study_edges
GROUP BY engine, study_id, root;
