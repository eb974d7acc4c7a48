-- Personalization as the paper compares it (issue 17), and two of its figures.
--
-- 1. Every round is compared on two lists (analytics/stats/personalization.py: LINKS):
--    links = 'primary', the paper's: the primary link of every result of the main column in
--    page order (boxes such as news or videos by the link they lead to, those without one,
--    such as related searches, by their type as a static label; ads, shopping ads and the
--    knowledge panel are not results), and links = 'organic', the organic results only (what
--    0008 compared). The pairs move to agg_personalization_link_pairs, which has links in
--    its key (a sorting key cannot gain a column with a default); the rows of earlier rounds
--    are copied over as 'organic' (their primary rows appear when a round is recomputed,
--    e.g. by a replay). Every summary view gains a links column: filter on it
--    (`WHERE links = 'primary'`); `report personalization --links` does.
-- 2. Rank-1 movement (the paper's Figure 16): rank1_from is where a treatment's new rank-1
--    result was on the control's page, rank1_to where the control's rank-1 result went on
--    the treatment's page (1-based, whole first page; 0 = not on the page, i.e. evicted),
--    set when rank1_moved (255 = not known: a pair copied from before this migration).
--    personalization_rank1 counts the known ones.
-- 3. Day-to-day consistency (Figures 12-13) with Jaccard and edit distance, computed by the
--    worker (the unrestricted Damerau-Levenshtein distance of the pairs; ClickHouse's own
--    is the restricted one) into agg_personalization_consistency: each profile's first
--    usable page of a query on a day (the crawler's clock, sent_at: the day the page was
--    fetched, however late it was sent) against the previous day it saw the query.

CREATE TABLE IF NOT EXISTS agg_personalization_link_pairs
(
    study_id         LowCardinality(String),
    round_id         String,
    query            String,
    query_category   LowCardinality(String),
    engine           LowCardinality(String),
    round_started_at DateTime64(3, 'UTC'),
    links            LowCardinality(String),
    kind             LowCardinality(String),
    treatment        LowCardinality(String),
    profile_a        LowCardinality(String),
    profile_b        LowCardinality(String),
    jaccard          Float64,
    edit_distance    UInt16,
    changed          Array(UInt8),
    rank1_moved      UInt8,
    rank1_from       UInt8,
    rank1_to         UInt8,
    computed_at      DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(round_started_at)
ORDER BY (study_id, round_id, query, links, kind, profile_a, profile_b);

INSERT INTO agg_personalization_link_pairs
SELECT study_id, round_id, query, query_category, engine, round_started_at, 'organic', kind,
       treatment, profile_a, profile_b, jaccard, edit_distance, changed, rank1_moved,
       if(rank1_moved = 1, 255, 0), if(rank1_moved = 1, 255, 0), computed_at
FROM agg_personalization_pairs FINAL;

-- agg_personalization_pairs is left in place, unused: dropping it would make this
-- migration fail if it were interrupted after the drop and applied again (migrate.py
-- applies an interrupted migration again, statement by statement); copying twice is
-- harmless (ReplacingMergeTree keeps one row per key).

-- Views defined in views/<name>.sql (applied after the migrations): personalization_pairs,
-- personalization_by_rank, personalization_by_treatment, personalization_by_query,
-- personalization_by_category, personalization_overall, personalization_rank1.

CREATE TABLE IF NOT EXISTS agg_personalization_consistency
(
    study_id       LowCardinality(String),
    profile_id     LowCardinality(String),
    role           LowCardinality(String),
    treatment      LowCardinality(String),
    query          String,
    query_category LowCardinality(String),
    links          LowCardinality(String),
    day            Date,
    previous_day   Date,
    jaccard        Float64,
    edit_distance  UInt16,
    computed_at    DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (study_id, profile_id, query, links, day);

-- View defined in views/<name>.sql (applied after the migrations):
-- personalization_consistency.
