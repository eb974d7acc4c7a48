-- Crawl markers carry the study a crawl belongs to: a root's consecutive crawls are
-- compared (churn, nmi) only within one study, never against another study that
-- crawled the same root. '' for crawls sent without one.

ALTER TABLE raw_autocomplete_events ADD COLUMN IF NOT EXISTS study_id LowCardinality(String) DEFAULT '';

DROP VIEW IF EXISTS crawl_markers;

CREATE VIEW crawl_markers AS
SELECT event_id, type, sent_at, received_at, crawl_id, study_id, engine, root, max_depth,
       trimming_rule, n_nodes, n_edges, n_failed
FROM raw_autocomplete_events FINAL
WHERE type IN ('crawl_started', 'crawl_completed');

ALTER TABLE agg_autocomplete_crawls ADD COLUMN IF NOT EXISTS study_id LowCardinality(String) DEFAULT '';

DROP VIEW IF EXISTS autocomplete_crawls;

CREATE VIEW autocomplete_crawls AS
SELECT engine, root, crawl_id, study_id, completed_at, previous_crawl_id, n_nodes, n_edges, n_failed,
       n_blocked, max_depth, trimming_rule, nmi
FROM agg_autocomplete_crawls FINAL;
