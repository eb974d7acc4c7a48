-- Autocomplete audits (DESIGN.md §3.3). The worker writes these when a crawl_completed
-- marker arrives, from the crawl's autocomplete_node rows and the pure functions in
-- streams/stats/autocomplete*.py; a replay rewrites the same rows (newest computed_at
-- wins). Read them through the views, which use FINAL.

-- Every edge of a completed crawl: source (a submitted query) -> target (a suggestion)
-- at its rank, with the source's depth. trimmed marks an edge the trimming rule drops
-- (it is kept, not deleted); the reductions name both ends in the association network.
CREATE TABLE IF NOT EXISTS agg_autocomplete_edges
(
    engine         LowCardinality(String),
    root           String,
    crawl_id       String,
    completed_at   DateTime64(3, 'UTC'),
    source         String,
    target         String,
    rank           UInt8,
    depth          UInt8,
    self_loop      UInt8,
    trimmed        UInt8,
    platforms      Array(String),
    computed_at    DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(completed_at)
ORDER BY (engine, root, crawl_id, source, rank);

-- One row per completed crawl of a root, with nmi against the root's previous completed
-- crawl (NULL for its first).
CREATE TABLE IF NOT EXISTS agg_autocomplete_crawls
(
    engine            LowCardinality(String),
    root              String,
    crawl_id          String,
    completed_at      DateTime64(3, 'UTC'),
    previous_crawl_id String,
    n_nodes           UInt32,
    n_edges           UInt32,
    n_failed          UInt32,
    n_blocked         UInt32,
    max_depth         UInt8,
    trimming_rule     LowCardinality(String),
    nmi               Nullable(Float64),
    computed_at       DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (engine, root, crawl_id);

-- Churn per (rank, depth) between a root's consecutive completed crawls.
CREATE TABLE IF NOT EXISTS agg_autocomplete_churn
(
    engine            LowCardinality(String),
    root              String,
    crawl_id          String,
    previous_crawl_id String,
    completed_at      DateTime64(3, 'UTC'),
    rank              UInt8,
    depth             UInt8,
    churn             Float64,
    computed_at       DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (engine, root, crawl_id, rank, depth);

-- Association-network edges of one crawl (trimmed network, reduced n-grams with memory).
CREATE TABLE IF NOT EXISTS agg_autocomplete_associations
(
    engine         LowCardinality(String),
    root           String,
    crawl_id       String,
    completed_at   DateTime64(3, 'UTC'),
    source_reduced String,
    target_reduced String,
    edges          UInt32,
    computed_at    DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (engine, root, crawl_id, source_reduced, target_reduced);

CREATE VIEW IF NOT EXISTS autocomplete_edges AS
SELECT engine, root, crawl_id, completed_at, source, target, rank, depth, self_loop, trimmed, platforms
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
SELECT engine, root, crawl_id, completed_at, previous_crawl_id, n_nodes, n_edges, n_failed,
       n_blocked, max_depth, trimming_rule, nmi
FROM agg_autocomplete_crawls FINAL;

CREATE VIEW IF NOT EXISTS autocomplete_churn AS
SELECT engine, root, crawl_id, previous_crawl_id, completed_at, rank, depth, churn
FROM agg_autocomplete_churn FINAL;

CREATE VIEW IF NOT EXISTS autocomplete_churn_by_rank_depth AS
SELECT engine, rank, depth, avg(churn) AS mean_churn, count() AS pairs
FROM autocomplete_churn
GROUP BY engine, rank, depth;

CREATE VIEW IF NOT EXISTS autocomplete_survival AS
SELECT engine, root, target AS suggestion, min(completed_at) AS first_seen,
       max(completed_at) AS last_seen, uniqExact(toDate(completed_at)) AS days
FROM autocomplete_edges
GROUP BY engine, root, suggestion;

CREATE VIEW IF NOT EXISTS autocomplete_associations AS
SELECT engine, root, source_reduced, target_reduced, sum(edges) AS weight,
       uniqExact(crawl_id) AS crawls
FROM agg_autocomplete_associations FINAL
GROUP BY engine, root, source_reduced, target_reduced;

CREATE VIEW IF NOT EXISTS autocomplete_social_mentions AS
SELECT engine, root, platform, uniqExact(crawl_id, target) AS mentions
FROM autocomplete_edges
ARRAY JOIN platforms AS platform
GROUP BY engine, root, platform;
