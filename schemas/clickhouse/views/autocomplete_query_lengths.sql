-- The paper's Figure 4: the words per query (every node, roots included) and the change
-- in words from a query to each suggestion it links to (target - source).
-- A parameterised view over each network's nodes (agg_autocomplete_structure): network
-- ('trimmed' or 'full'), study (a crawl id prefix, '' = all), engine and root ('' = all);
-- pass every parameter.
CREATE OR REPLACE VIEW autocomplete_query_lengths AS
SELECT engine, {network:String} AS network, measure, value, count() AS n,
       n / sum(n) OVER (PARTITION BY engine, measure) AS share
FROM (SELECT engine, 'words' AS measure, toInt32(words) AS value
      FROM agg_autocomplete_structure FINAL
      WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
        AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String})
      UNION ALL
      SELECT engine, 'change' AS measure, toInt32(change) AS value
      FROM agg_autocomplete_structure FINAL ARRAY JOIN length_changes AS change
      WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
        AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String}))
GROUP BY engine, measure, value;
