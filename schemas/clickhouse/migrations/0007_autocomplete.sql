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

-- Views defined in views/<name>.sql (applied after the migrations): autocomplete_edges,
-- autocomplete_network_nodes, autocomplete_crawls, autocomplete_churn,
-- autocomplete_churn_by_rank_depth, autocomplete_survival, autocomplete_associations,
-- autocomplete_social_mentions.
