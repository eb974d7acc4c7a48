-- The rank correlations the paper reports (Spearman's rho: Pearson's r of the mid-ranks,
-- ties averaged, as scipy.stats.spearmanr), per engine, over
--   depth ~ k_out, words ~ depth, words ~ k_out: submitted queries (words ~ depth: every node),
--   depth ~ merge_points: each network's count of merge points at each depth it has nodes at,
--   churn ~ depth, churn ~ rank, churn ~ query_words: the churn cells c(t, q) of
--   autocomplete_churn (depth: of the queries that produced the cell; query_words: their mean
--   length); and churn ~ rank within each depth (at_depth; NULL = all depths).
-- `auditstream report autocomplete --section structure` adds the two-sided p-value.
-- A parameterised view over each network's nodes and churn cells (agg_autocomplete_structure,
-- agg_autocomplete_churn): network ('trimmed' or 'full'), study (a crawl id prefix, '' = all),
-- engine and root ('' = all); pass every parameter.
CREATE OR REPLACE VIEW autocomplete_correlations AS
SELECT engine, {network:String} AS network, x, y, at_depth, corrStable(rx, ry) AS rho, count() AS n
FROM (SELECT engine, x, y, at_depth,
             rank() OVER (PARTITION BY engine, x, y, at_depth ORDER BY vx)
               + (count() OVER (PARTITION BY engine, x, y, at_depth, vx) - 1) / 2 AS rx,
             rank() OVER (PARTITION BY engine, x, y, at_depth ORDER BY vy)
               + (count() OVER (PARTITION BY engine, x, y, at_depth, vy) - 1) / 2 AS ry
      FROM (SELECT engine, tupleElement(p, 1) AS x, tupleElement(p, 2) AS y,
                   CAST(NULL, 'Nullable(Int16)') AS at_depth, tupleElement(p, 3) AS vx, tupleElement(p, 4) AS vy
            FROM agg_autocomplete_structure FINAL
            ARRAY JOIN [('depth', 'k_out', toFloat64(depth), toFloat64(k_out), submitted),
                        ('words', 'depth', toFloat64(words), toFloat64(depth), toUInt8(1)),
                        ('words', 'k_out', toFloat64(words), toFloat64(k_out), submitted)] AS p
            WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
            AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String}) AND tupleElement(p, 5) = 1
            UNION ALL
            SELECT engine, 'depth' AS x, 'merge_points' AS y, CAST(NULL, 'Nullable(Int16)') AS at_depth,
                   toFloat64(depth) AS vx, toFloat64(countIf(k_in > 1)) AS vy
            FROM agg_autocomplete_structure FINAL
            WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
            AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String})
            GROUP BY engine, root, crawl_id, depth
            UNION ALL
            SELECT engine, tupleElement(p, 1) AS x, tupleElement(p, 2) AS y, tupleElement(p, 3) AS at_depth,
                   churn AS vx, tupleElement(p, 4) AS vy
            FROM agg_autocomplete_churn FINAL
            ARRAY JOIN [('churn', 'depth', CAST(NULL, 'Nullable(Int16)'), toFloat64(depth)),
                        ('churn', 'rank', CAST(NULL, 'Nullable(Int16)'), toFloat64(rank)),
                        ('churn', 'query_words', CAST(NULL, 'Nullable(Int16)'), query_words),
                        ('churn', 'rank', toNullable(toInt16(depth)), toFloat64(rank))] AS p
            WHERE network = {network:String} AND startsWith(crawl_id, {study:String})
            AND ({engine:String} = '' OR engine = {engine:String}) AND ({root:String} = '' OR root = {root:String})))
GROUP BY engine, x, y, at_depth;
