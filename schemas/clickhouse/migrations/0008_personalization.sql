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

CREATE VIEW IF NOT EXISTS personalization_pairs AS
SELECT study_id, round_id, query, query_category, engine, round_started_at, kind, treatment,
       profile_a, profile_b, jaccard, edit_distance, changed, rank1_moved
FROM agg_personalization_pairs FINAL;

CREATE VIEW IF NOT EXISTS personalization_rounds AS
SELECT study_id, round_id, query, query_category, engine, round_started_at, first_received_at,
       skew_ms, profiles_expected, profiles_received, profiles_failed, late, state
FROM agg_personalization_rounds FINAL;

-- Share of results changed at each rank: treatment vs control against the noise floor
-- (control vs twin) of the same study; personalization is the difference.
CREATE VIEW IF NOT EXISTS personalization_by_rank AS
SELECT t.study_id AS study_id, t.rank AS rank, t.treatment AS treatment,
       t.changed_treatment AS changed_treatment, n.changed_noise AS changed_noise,
       t.changed_treatment - n.changed_noise AS personalization, t.pairs AS pairs
FROM
(
    SELECT study_id, treatment, rank, avg(changed[rank]) AS changed_treatment, count() AS pairs
    FROM personalization_pairs ARRAY JOIN arrayEnumerate(changed) AS rank
    WHERE kind = 'treatment'
    GROUP BY study_id, treatment, rank
) AS t
LEFT JOIN
(
    SELECT study_id, rank, avg(changed[rank]) AS changed_noise
    FROM personalization_pairs ARRAY JOIN arrayEnumerate(changed) AS rank
    WHERE kind = 'noise'
    GROUP BY study_id, rank
) AS n ON n.study_id = t.study_id AND n.rank = t.rank;

-- Per treatment value: mean Jaccard and edit distance against the control, the same for
-- the control/twin pair (the paper's control bars), and the share of results changed.
CREATE VIEW IF NOT EXISTS personalization_by_treatment AS
SELECT t.study_id AS study_id, t.treatment AS treatment, t.jaccard AS jaccard,
       n.jaccard AS jaccard_noise, t.edit_distance AS edit_distance,
       n.edit_distance AS edit_distance_noise, t.changed AS changed, n.changed AS changed_noise,
       t.changed - n.changed AS personalization, t.pairs AS pairs
FROM
(
    SELECT study_id, treatment, avg(jaccard) AS jaccard, avg(edit_distance) AS edit_distance,
           avg(arrayAvg(changed)) AS changed, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, treatment
) AS t
LEFT JOIN
(
    SELECT study_id, avg(jaccard) AS jaccard, avg(edit_distance) AS edit_distance,
           avg(arrayAvg(changed)) AS changed
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id
) AS n ON n.study_id = t.study_id;

-- Per query: how personalized it is beyond the noise of the same query.
CREATE VIEW IF NOT EXISTS personalization_by_query AS
SELECT t.study_id AS study_id, t.query AS query, t.query_category AS query_category,
       t.treatment AS treatment, t.changed AS changed, n.changed AS changed_noise,
       t.changed - n.changed AS personalization, t.jaccard AS jaccard, n.jaccard AS jaccard_noise,
       t.pairs AS pairs
FROM
(
    SELECT study_id, query, any(query_category) AS query_category, treatment,
           avg(arrayAvg(changed)) AS changed, avg(jaccard) AS jaccard, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, query, treatment
) AS t
LEFT JOIN
(
    SELECT study_id, query, avg(arrayAvg(changed)) AS changed, avg(jaccard) AS jaccard
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id, query
) AS n ON n.study_id = t.study_id AND n.query = t.query;

-- Day-to-day consistency: each profile's organic results for a query on one day (its
-- first usable snapshot of the day) against the previous day it saw that query.
CREATE VIEW IF NOT EXISTS personalization_consistency AS
SELECT study_id, profile_id, role, treatment, query, day, previous_day,
       if(length(arrayDistinct(arrayConcat(urls, previous_urls))) = 0, 1,
          length(arrayIntersect(urls, previous_urls))
              / length(arrayDistinct(arrayConcat(urls, previous_urls)))) AS jaccard
FROM
(
    SELECT study_id, profile_id, role, treatment, query, day, urls,
           lagInFrame(urls) OVER w AS previous_urls, lagInFrame(day) OVER w AS previous_day,
           row_number() OVER w AS nth
    FROM
    (
        SELECT study_id, profile_id, any(role) AS role, any(treatment) AS treatment, query,
               toDate(received_at) AS day,
               argMin(arrayMap(r -> r.3, arrayFilter(r -> r.2 = 'organic', results)), received_at) AS urls
        FROM serp_snapshots
        WHERE status = 'ok'
        GROUP BY study_id, profile_id, query, day
    )
    WINDOW w AS (PARTITION BY study_id, profile_id, query ORDER BY day
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
WHERE nth > 1;
