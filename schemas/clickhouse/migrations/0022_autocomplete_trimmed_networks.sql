-- Trim before analysis, as the paper does (RAI §3): every autocomplete statistic is now
-- computed on each crawl's trimmed network (its trimming rule; emergent roots and all
-- below them dropped) and, apart, on the full network; every row says which in `network`.
-- The views show the trimmed network; their twins named `..._full` the untrimmed one.
-- New: one row per node of each network (depth, rank, degrees, length: the paper's
-- Figures 2-4) and parameterised views over it. The derived tables are rebuilt: they are
-- emptied here and the worker recomputes every completed crawl from the raw events,
-- oldest first (streams/processors/autocomplete_crawls.py, the orphan scan).

DROP VIEW IF EXISTS autocomplete_network_nodes;

DROP VIEW IF EXISTS autocomplete_edges;

DROP VIEW IF EXISTS autocomplete_crawls;

DROP VIEW IF EXISTS autocomplete_churn_by_rank_depth;

DROP VIEW IF EXISTS autocomplete_churn;

DROP VIEW IF EXISTS autocomplete_survival;

DROP VIEW IF EXISTS autocomplete_associations;

DROP VIEW IF EXISTS autocomplete_social_mentions;

DROP TABLE IF EXISTS agg_autocomplete_crawls;

DROP TABLE IF EXISTS agg_autocomplete_churn;

DROP TABLE IF EXISTS agg_autocomplete_associations;

TRUNCATE TABLE IF EXISTS agg_autocomplete_edges;

-- kept: the edge belongs to the trimmed network (the rule keeps it and a chain of kept
-- edges leads from the root to its source). trimmed stays the rule's verdict alone.
ALTER TABLE agg_autocomplete_edges ADD COLUMN IF NOT EXISTS kept UInt8 DEFAULT 0 AFTER trimmed;

CREATE TABLE IF NOT EXISTS agg_autocomplete_crawls
(
    engine            LowCardinality(String),
    root              String,
    crawl_id          String,
    network           LowCardinality(String) DEFAULT 'trimmed',
    study_id          LowCardinality(String) DEFAULT '',
    completed_at      DateTime64(3, 'UTC'),
    previous_crawl_id String,
    n_nodes           UInt32,
    n_edges           UInt32,
    n_failed          UInt32,
    n_blocked         UInt32,
    max_depth         UInt8,
    trimming_rule     LowCardinality(String),
    net_nodes         UInt32 DEFAULT 0,
    net_edges         UInt32 DEFAULT 0,
    nmi               Nullable(Float64),
    computed_at       DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (engine, root, crawl_id, network);

CREATE TABLE IF NOT EXISTS agg_autocomplete_churn
(
    engine            LowCardinality(String),
    root              String,
    crawl_id          String,
    network           LowCardinality(String) DEFAULT 'trimmed',
    previous_crawl_id String,
    completed_at      DateTime64(3, 'UTC'),
    rank              UInt8,
    depth             UInt8,
    churn             Float64,
    query_words       Float64 DEFAULT nan,
    computed_at       DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (engine, root, crawl_id, network, rank, depth);

CREATE TABLE IF NOT EXISTS agg_autocomplete_associations
(
    engine         LowCardinality(String),
    root           String,
    crawl_id       String,
    network        LowCardinality(String) DEFAULT 'trimmed',
    completed_at   DateTime64(3, 'UTC'),
    source_reduced String,
    target_reduced String,
    edges          UInt32,
    computed_at    DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (engine, root, crawl_id, network, source_reduced, target_reduced);

-- One row per node of a crawl's network (analytics/stats/autocomplete_structure.py).
-- Crawls with failed nodes have none.
CREATE TABLE IF NOT EXISTS agg_autocomplete_structure
(
    engine         LowCardinality(String),
    root           String,
    crawl_id       String,
    network        LowCardinality(String) DEFAULT 'trimmed',
    study_id       LowCardinality(String) DEFAULT '',
    completed_at   DateTime64(3, 'UTC'),
    node           String,
    depth          UInt8,
    rank           UInt8,
    submitted      UInt8,
    n_suggestions  UInt16,
    k_in           UInt32,
    k_out          UInt32,
    words          UInt16,
    length_changes Array(Int16),
    computed_at    DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(completed_at)
ORDER BY (engine, root, crawl_id, network, node);

CREATE VIEW IF NOT EXISTS autocomplete_edges AS
SELECT engine, root, crawl_id, completed_at, source, target, rank, depth, self_loop, trimmed, kept, platforms
FROM agg_autocomplete_edges FINAL;

CREATE VIEW IF NOT EXISTS autocomplete_network_nodes AS
SELECT engine, root, crawl_id, any(completed_at) AS crawl_completed_at, target AS node,
       min((depth, rank)) AS first_seen_at,
       tupleElement(first_seen_at, 1) + 1 AS node_depth, tupleElement(first_seen_at, 2) AS node_rank,
       min(trimmed) AS node_trimmed
FROM autocomplete_edges
WHERE NOT self_loop
GROUP BY engine, root, crawl_id, target;

CREATE VIEW IF NOT EXISTS autocomplete_crawls AS
SELECT engine, root, crawl_id, study_id, network, completed_at, previous_crawl_id, n_nodes, n_edges,
       n_failed, n_blocked, max_depth, trimming_rule, net_nodes, net_edges, nmi
FROM agg_autocomplete_crawls FINAL
WHERE network = 'trimmed';

CREATE VIEW IF NOT EXISTS autocomplete_crawls_full AS
SELECT engine, root, crawl_id, study_id, network, completed_at, previous_crawl_id, n_nodes, n_edges,
       n_failed, n_blocked, max_depth, trimming_rule, net_nodes, net_edges, nmi
FROM agg_autocomplete_crawls FINAL
WHERE network = 'full';

CREATE VIEW IF NOT EXISTS autocomplete_churn AS
SELECT engine, root, crawl_id, network, previous_crawl_id, completed_at, rank, depth, churn, query_words
FROM agg_autocomplete_churn FINAL
WHERE network = 'trimmed';

CREATE VIEW IF NOT EXISTS autocomplete_churn_full AS
SELECT engine, root, crawl_id, network, previous_crawl_id, completed_at, rank, depth, churn, query_words
FROM agg_autocomplete_churn FINAL
WHERE network = 'full';

CREATE VIEW IF NOT EXISTS autocomplete_churn_by_rank_depth AS
SELECT engine, network, rank, depth, avg(churn) AS mean_churn, count() AS pairs
FROM autocomplete_churn
GROUP BY engine, network, rank, depth;

CREATE VIEW IF NOT EXISTS autocomplete_churn_by_rank_depth_full AS
SELECT engine, network, rank, depth, avg(churn) AS mean_churn, count() AS pairs
FROM autocomplete_churn_full
GROUP BY engine, network, rank, depth;

CREATE VIEW IF NOT EXISTS autocomplete_survival AS
SELECT engine, 'trimmed' AS network, root, target AS suggestion, min(completed_at) AS first_seen,
       max(completed_at) AS last_seen, uniqExact(toDate(completed_at)) AS days
FROM autocomplete_edges
WHERE kept
GROUP BY engine, root, suggestion;

CREATE VIEW IF NOT EXISTS autocomplete_survival_full AS
SELECT engine, 'full' AS network, root, target AS suggestion, min(completed_at) AS first_seen,
       max(completed_at) AS last_seen, uniqExact(toDate(completed_at)) AS days
FROM autocomplete_edges
GROUP BY engine, root, suggestion;

CREATE VIEW IF NOT EXISTS autocomplete_associations AS
SELECT engine, network, root, source_reduced, target_reduced, sum(edges) AS weight,
       uniqExact(crawl_id) AS crawls
FROM agg_autocomplete_associations FINAL
WHERE network = 'trimmed'
GROUP BY engine, network, root, source_reduced, target_reduced;

CREATE VIEW IF NOT EXISTS autocomplete_associations_full AS
SELECT engine, network, root, source_reduced, target_reduced, sum(edges) AS weight,
       uniqExact(crawl_id) AS crawls
FROM agg_autocomplete_associations FINAL
WHERE network = 'full'
GROUP BY engine, network, root, source_reduced, target_reduced;

-- Social media (paper §4.2): a suggestion is a distinct (crawl, suggestion) pair.
CREATE VIEW IF NOT EXISTS autocomplete_social_mentions AS
SELECT m.engine AS engine, 'trimmed' AS network, m.root AS root, m.platform AS platform,
       m.mentions AS mentions, s.suggestions AS suggestions, m.mentions / s.suggestions AS share
FROM (SELECT engine, root, platform, uniqExact(crawl_id, target) AS mentions
      FROM autocomplete_edges ARRAY JOIN platforms AS platform
      WHERE kept GROUP BY engine, root, platform) AS m
INNER JOIN (SELECT engine, root, uniqExact(crawl_id, target) AS suggestions
            FROM autocomplete_edges WHERE kept GROUP BY engine, root) AS s
ON m.engine = s.engine AND m.root = s.root;

CREATE VIEW IF NOT EXISTS autocomplete_social_mentions_full AS
SELECT m.engine AS engine, 'full' AS network, m.root AS root, m.platform AS platform,
       m.mentions AS mentions, s.suggestions AS suggestions, m.mentions / s.suggestions AS share
FROM (SELECT engine, root, platform, uniqExact(crawl_id, target) AS mentions
      FROM autocomplete_edges ARRAY JOIN platforms AS platform
      GROUP BY engine, root, platform) AS m
INNER JOIN (SELECT engine, root, uniqExact(crawl_id, target) AS suggestions
            FROM autocomplete_edges GROUP BY engine, root) AS s
ON m.engine = s.engine AND m.root = s.root;

CREATE VIEW IF NOT EXISTS autocomplete_social_share AS
SELECT engine, 'trimmed' AS network, root, uniqExact(crawl_id, target) AS suggestions,
       uniqExactIf((crawl_id, target), notEmpty(platforms)) AS social, social / suggestions AS share
FROM autocomplete_edges
WHERE kept
GROUP BY engine, root;

CREATE VIEW IF NOT EXISTS autocomplete_social_share_full AS
SELECT engine, 'full' AS network, root, uniqExact(crawl_id, target) AS suggestions,
       uniqExactIf((crawl_id, target), notEmpty(platforms)) AS social, social / suggestions AS share
FROM autocomplete_edges
GROUP BY engine, root;

CREATE VIEW IF NOT EXISTS autocomplete_node_structure AS
SELECT engine, root, crawl_id, study_id, network, completed_at, node, depth, rank, submitted,
       n_suggestions, k_in, k_out, k_in > 1 AS merge_point, words, length_changes
FROM agg_autocomplete_structure FINAL
WHERE network = 'trimmed';

CREATE VIEW IF NOT EXISTS autocomplete_node_structure_full AS
SELECT engine, root, crawl_id, study_id, network, completed_at, node, depth, rank, submitted,
       n_suggestions, k_in, k_out, k_in > 1 AS merge_point, words, length_changes
FROM agg_autocomplete_structure FINAL
WHERE network = 'full';

-- The paper's Figure 2 and the depth trends of §4.1-4.2, for any selection: network
-- ('trimmed' or 'full'), study (a crawl id prefix, '' = all), engine and root ('' = all).
-- mean_* per crawl divide by every crawl of the engine selected, with or without nodes
-- at that depth.
CREATE VIEW IF NOT EXISTS autocomplete_nodes_by_depth AS
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

-- The paper's Figure 3: how many submitted queries produced k suggestions (k_out), how
-- many nodes other than the root were suggested k times (k_in). share pools the nodes;
-- mean_probability is the paper's mean over networks of each network's share.
CREATE VIEW IF NOT EXISTS autocomplete_degree_distribution AS
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

-- The paper's Figure 4: the words per query (every node, roots included) and the change
-- in words from a query to each suggestion it links to (target - source).
CREATE VIEW IF NOT EXISTS autocomplete_query_lengths AS
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

-- Per engine: the paper's §4.1-4.2 numbers. max_suggestions is the longest response seen
-- (self-loop included: Google's 10, Bing's 8 in the paper); degrees and the mean k_out are
-- over submitted queries, k_in over every node but the root; edge shares over the links
-- from a query to a different suggestion.
CREATE VIEW IF NOT EXISTS autocomplete_structure_summary AS
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

-- The rank correlations the paper reports (Spearman's rho: Pearson's r of the mid-ranks,
-- ties averaged, as scipy.stats.spearmanr), per engine, over
--   depth ~ k_out, words ~ depth, words ~ k_out: submitted queries (words ~ depth: every node);
--   depth ~ merge_points: each network's count of merge points at each depth it has nodes at;
--   churn ~ depth, churn ~ rank, churn ~ query_words: the churn cells c(t, q) of
--   autocomplete_churn (depth: of the queries that produced the cell; query_words: their mean
--   length); and churn ~ rank within each depth (at_depth; NULL = all depths).
-- `auditstream report autocomplete --section structure` adds the two-sided p-value.
CREATE VIEW IF NOT EXISTS autocomplete_correlations AS
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
