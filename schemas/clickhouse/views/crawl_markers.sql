-- The crawl_started / crawl_completed markers, deduplicated (FINAL), with the study the crawl
-- belongs to ('' for crawls sent without one): a root's consecutive crawls are compared
-- (churn, nmi) only within one study.
CREATE OR REPLACE VIEW crawl_markers AS
SELECT event_id, type, sent_at, received_at, crawl_id, study_id, engine, root, max_depth,
       trimming_rule, n_nodes, n_edges, n_failed
FROM raw_autocomplete_events FINAL
WHERE type IN ('crawl_started', 'crawl_completed');
