-- Per engine: the paper's §4.1-4.2 numbers. max_suggestions is the longest response seen
-- (self-loop included: Google's 10, Bing's 8 in the paper); degrees and the mean k_out are
-- over submitted queries, k_in over every node but the root; edge shares over the links
-- from a query to a different suggestion.
-- A parameterised view over each network's nodes (agg_autocomplete_structure): network
-- ('trimmed' or 'full'), study (a crawl id prefix, '' = all), engine and root ('' = all);
-- pass every parameter.
CREATE OR REPLACE VIEW autocomplete_structure_summary AS
SELECT engine, {network:String} AS network, uniqExact(root, crawl_id) AS crawls, count() AS nodes,
       countIf(submitted = 1) AS submitted_queries, max(n_suggestions) AS max_suggestions,
       avgIf(k_out, submitted = 1) AS mean_k_out, stddevSampIf(k_out, submitted = 1) AS sd_k_out,
       maxIf(k_out, submitted = 1) AS max_k_out, avgIf(k_in, depth > 0) AS mean_k_in,
       stddevSampIf(k_in, depth > 0) AS sd_k_in, maxIf(k_in, depth > 0) AS max_k_in,
       countIf(k_in > 1) AS merge_points, merge_points / countIf(depth > 0) AS merge_share,
       avg(words) AS mean_words, stddevSamp(words) AS sd_words, countIf(words > 3) / nodes AS share_over_3_words,
       sum(length(length_changes)) AS edges,
       sum(arrayCount(c -> c > 0, length_changes)) / edges AS share_longer,
       sum(arrayCount(c -> c = 0, length_changes)) / edges AS share_same,
       sum(arrayCount(c -> c < 0, length_changes)) / edges AS share_shorter
FROM (SELECT engine, root, crawl_id, depth, submitted, n_suggestions, k_in, k_out, words, length_changes
      FROM agg_autocomplete_structure FINAL
      WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
        AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String}))
GROUP BY engine;
