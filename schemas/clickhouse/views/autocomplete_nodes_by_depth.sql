-- The paper's Figure 2 and the depth trends of §4.1-4.2, per engine and depth. mean_* per
-- crawl divide by every crawl of the engine selected, with or without nodes at that depth.
-- A parameterised view over each network's nodes (agg_autocomplete_structure): network
-- ('trimmed' or 'full'), study (a crawl id prefix, '' = all), engine and root ('' = all);
-- pass every parameter.
CREATE OR REPLACE VIEW autocomplete_nodes_by_depth AS
SELECT d.engine AS engine, {network:String} AS network, d.depth AS depth, c.crawls AS crawls,
       d.nodes AS nodes, d.nodes / c.crawls AS mean_nodes, d.merge_points AS merge_points,
       d.merge_points / c.crawls AS mean_merge_points, d.mean_words AS mean_words,
       d.queries AS queries, d.mean_k_out AS mean_k_out
FROM (SELECT engine, depth, count() AS nodes, countIf(k_in > 1) AS merge_points, avg(words) AS mean_words,
             countIf(submitted = 1) AS queries, avgIf(k_out, submitted = 1) AS mean_k_out
      FROM agg_autocomplete_structure FINAL
      WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
        AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String})
      GROUP BY engine, depth) AS d
INNER JOIN (SELECT engine, uniqExact(root, crawl_id) AS crawls
            FROM agg_autocomplete_structure FINAL
            WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
              AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String})
            GROUP BY engine) AS c
ON d.engine = c.engine;
