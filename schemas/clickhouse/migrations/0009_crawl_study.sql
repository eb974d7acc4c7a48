-- Crawl markers carry the study a crawl belongs to: a root's consecutive crawls are
-- compared (churn, nmi) only within one study, never against another study that
-- crawled the same root. '' for crawls sent without one.

ALTER TABLE raw_autocomplete_events ADD COLUMN IF NOT EXISTS study_id LowCardinality(String) DEFAULT '';

DROP VIEW IF EXISTS crawl_markers;

-- View defined in views/<name>.sql (applied after the migrations): crawl_markers.

ALTER TABLE agg_autocomplete_crawls ADD COLUMN IF NOT EXISTS study_id LowCardinality(String) DEFAULT '';

DROP VIEW IF EXISTS autocomplete_crawls;

-- View defined in views/<name>.sql (applied after the migrations): autocomplete_crawls.
