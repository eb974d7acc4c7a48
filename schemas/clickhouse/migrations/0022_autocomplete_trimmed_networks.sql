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

-- Views defined in views/<name>.sql (applied after the migrations): autocomplete_edges,
-- autocomplete_network_nodes, autocomplete_crawls, autocomplete_crawls_full,
-- autocomplete_churn, autocomplete_churn_full, autocomplete_churn_by_rank_depth,
-- autocomplete_churn_by_rank_depth_full, autocomplete_survival, autocomplete_survival_full,
-- autocomplete_associations, autocomplete_associations_full, autocomplete_social_mentions,
-- autocomplete_social_mentions_full, autocomplete_social_share,
-- autocomplete_social_share_full, autocomplete_node_structure,
-- autocomplete_node_structure_full, autocomplete_nodes_by_depth,
-- autocomplete_degree_distribution, autocomplete_query_lengths,
-- autocomplete_structure_summary, autocomplete_correlations.
