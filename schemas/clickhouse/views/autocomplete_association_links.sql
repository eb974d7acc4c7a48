-- The association networks' links per crawl (both networks: filter on network), for the
-- RAI §4.4 cross-engine degree correlation: each distinct (source, target) pair of reduced
-- n-grams an engine's crawl of a root linked. `report autocomplete --section compare`
-- aggregates them per engine over the selected crawls and ranks the n-grams by degree.
CREATE OR REPLACE VIEW autocomplete_association_links AS
SELECT DISTINCT engine, network, crawl_id, root, source_reduced, target_reduced
FROM agg_autocomplete_associations FINAL;
