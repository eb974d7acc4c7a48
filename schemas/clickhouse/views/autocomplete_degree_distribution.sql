-- The paper's Figure 3: how many submitted queries produced k suggestions (k_out), how
-- many nodes other than the root were suggested k times (k_in). share pools the nodes;
-- mean_probability is the paper's mean over networks of each network's share.
-- A parameterised view over each network's nodes (agg_autocomplete_structure): network
-- ('trimmed' or 'full'), study (a crawl id prefix, '' = all), engine and root ('' = all);
-- pass every parameter.
CREATE OR REPLACE VIEW autocomplete_degree_distribution AS
SELECT engine, {network:String} AS network, degree, k, count() AS nodes,
       nodes / sum(nodes) OVER (PARTITION BY engine, degree) AS share,
       sum(1 / network_nodes) / any(networks) AS mean_probability
FROM (SELECT engine, tupleElement(d, 1) AS degree, tupleElement(d, 2) AS k,
             count() OVER (PARTITION BY engine, degree, root, crawl_id) AS network_nodes,
             uniqExact(root, crawl_id) OVER (PARTITION BY engine, degree) AS networks
      FROM agg_autocomplete_structure FINAL
      ARRAY JOIN [('k_out', k_out, submitted = 1), ('k_in', k_in, depth > 0)] AS d
      WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
        AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String})
        AND tupleElement(d, 3))
GROUP BY engine, degree, k;
