-- Every edge of a completed crawl (agg_autocomplete_edges): source (a submitted query) ->
-- target (a suggestion) at its rank, with the source's depth; trimmed is the trimming rule's
-- verdict alone, kept whether the edge belongs to the trimmed network.
CREATE OR REPLACE VIEW autocomplete_edges AS
SELECT engine, root, crawl_id, completed_at, source, target, rank, depth, self_loop, trimmed, kept, platforms
FROM agg_autocomplete_edges FINAL;
