-- Every node of a crawl's network but the root, where it was first seen (depth, rank).
CREATE OR REPLACE VIEW autocomplete_network_nodes AS
SELECT engine, root, crawl_id, any(completed_at) AS crawl_completed_at, target AS node,
       min((depth, rank)) AS first_seen_at,
       tupleElement(first_seen_at, 1) + 1 AS node_depth, tupleElement(first_seen_at, 2) AS node_rank,
       min(trimmed) AS node_trimmed
FROM autocomplete_edges
WHERE NOT self_loop
GROUP BY engine, root, crawl_id, target;
