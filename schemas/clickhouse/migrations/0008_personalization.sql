-- Personalization audits (DESIGN.md §3.2, Hannak et al.). The worker writes these as
-- snapshots arrive, from serp_snapshots and streams/stats/personalization.py; a round
-- (study, round, query) is recomputed from its stored snapshots each time, so the rows
-- are exact and a replay rewrites the same values. Only snapshots received within
-- AUDITSTREAM_PERSONALIZATION_ROUND_WAIT_S of the round's first one count; later ones
-- are counted as late. Read through the views (FINAL).

-- One row per compared pair of a round: kind 'treatment' (a treatment profile against
-- the control) or 'noise' (the control against its twin). changed[i] = 1 when the
-- organic results at rank i differ.
CREATE TABLE IF NOT EXISTS agg_personalization_pairs
(
    study_id         LowCardinality(String),
    round_id         String,
    query            String,
    query_category   LowCardinality(String),
    engine           LowCardinality(String),
    round_started_at DateTime64(3, 'UTC'),
    kind             LowCardinality(String),
    treatment        LowCardinality(String),
    profile_a        LowCardinality(String),
    profile_b        LowCardinality(String),
    jaccard          Float64,
    edit_distance    UInt16,
    changed          Array(UInt8),
    rank1_moved      UInt8,
    computed_at      DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(round_started_at)
ORDER BY (study_id, round_id, query, kind, profile_a, profile_b);

-- One row per round and query: how complete it is, and the lock-step skew.
-- state: complete (every profile of the study arrived in time), waiting (inside the
-- wait), incomplete (the wait ended with profiles missing).
CREATE TABLE IF NOT EXISTS agg_personalization_rounds
(
    study_id          LowCardinality(String),
    round_id          String,
    query             String,
    query_category    LowCardinality(String),
    engine            LowCardinality(String),
    round_started_at  DateTime64(3, 'UTC'),
    first_received_at DateTime64(3, 'UTC'),
    skew_ms           Float64,
    profiles_expected UInt16,
    profiles_received UInt16,
    profiles_failed   UInt16,
    late              UInt16,
    state             LowCardinality(String),
    computed_at       DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (study_id, round_id, query);

-- Views defined in views/<name>.sql (applied after the migrations): personalization_pairs,
-- personalization_rounds, personalization_by_rank, personalization_by_treatment,
-- personalization_by_query, personalization_consistency.
