-- The autocomplete_node events of the crawls (one per submitted query), deduplicated (FINAL).
CREATE OR REPLACE VIEW autocomplete_nodes AS
SELECT event_id, schema_version, sent_at, received_at, crawl_id, engine, root, query, parent,
       depth, suggestions, status, raw_ref
FROM raw_autocomplete_events FINAL
WHERE type = 'autocomplete_node';
