-- The personalization summaries answer NULL for the noise floor and for personalization
-- when there is no control/twin pair to measure noise with (say the twin was blocked
-- every round), instead of a noise floor of 0 that would pass raw change off as
-- personalization. Same columns as before (0008, 0010).

CREATE OR REPLACE VIEW personalization_by_rank AS
SELECT t.study_id AS study_id, t.rank AS rank, t.treatment AS treatment,
       t.changed_treatment AS changed_treatment,
       if(n.noise_pairs = 0, NULL, n.changed_noise) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed_treatment - n.changed_noise) AS personalization,
       t.pairs AS pairs
FROM
(
    SELECT study_id, treatment, rank, avg(changed[rank]) AS changed_treatment, count() AS pairs
    FROM personalization_pairs ARRAY JOIN arrayEnumerate(changed) AS rank
    WHERE kind = 'treatment'
    GROUP BY study_id, treatment, rank
) AS t
LEFT JOIN
(
    SELECT study_id, rank, avg(changed[rank]) AS changed_noise, count() AS noise_pairs
    FROM personalization_pairs ARRAY JOIN arrayEnumerate(changed) AS rank
    WHERE kind = 'noise'
    GROUP BY study_id, rank
) AS n ON n.study_id = t.study_id AND n.rank = t.rank;

CREATE OR REPLACE VIEW personalization_by_treatment AS
SELECT t.study_id AS study_id, t.treatment AS treatment, t.jaccard AS jaccard,
       if(n.noise_pairs = 0, NULL, n.jaccard) AS jaccard_noise, t.edit_distance AS edit_distance,
       if(n.noise_pairs = 0, NULL, n.edit_distance) AS edit_distance_noise, t.changed AS changed,
       if(n.noise_pairs = 0, NULL, n.changed) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed - n.changed) AS personalization, t.pairs AS pairs
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
           avg(arrayAvg(changed)) AS changed, count() AS noise_pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id
) AS n ON n.study_id = t.study_id;

CREATE OR REPLACE VIEW personalization_by_query AS
SELECT t.study_id AS study_id, t.query AS query, t.query_category AS query_category,
       t.treatment AS treatment, t.changed AS changed,
       if(n.noise_pairs = 0, NULL, n.changed) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed - n.changed) AS personalization, t.jaccard AS jaccard,
       if(n.noise_pairs = 0, NULL, n.jaccard) AS jaccard_noise, t.pairs AS pairs
FROM
(
    SELECT study_id, query, any(query_category) AS query_category, treatment,
           avg(arrayAvg(changed)) AS changed, avg(jaccard) AS jaccard, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, query, treatment
) AS t
LEFT JOIN
(
    SELECT study_id, query, avg(arrayAvg(changed)) AS changed, avg(jaccard) AS jaccard,
           count() AS noise_pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id, query
) AS n ON n.study_id = t.study_id AND n.query = t.query;

CREATE OR REPLACE VIEW personalization_by_category AS
SELECT t.study_id AS study_id, t.query_category AS query_category, t.treatment AS treatment,
       t.changed AS changed, if(n.noise_pairs = 0, NULL, n.changed) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed - n.changed) AS personalization,
       t.rank1_moved AS rank1_moved, if(n.noise_pairs = 0, NULL, n.rank1_moved) AS rank1_moved_noise,
       t.pairs AS pairs
FROM
(
    SELECT study_id, query_category, treatment, avg(arrayAvg(changed)) AS changed,
           avg(rank1_moved) AS rank1_moved, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, query_category, treatment
) AS t
LEFT JOIN
(
    SELECT study_id, query_category, avg(arrayAvg(changed)) AS changed, avg(rank1_moved) AS rank1_moved,
           count() AS noise_pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id, query_category
) AS n ON n.study_id = t.study_id AND n.query_category = t.query_category;

CREATE OR REPLACE VIEW personalization_overall AS
SELECT t.study_id AS study_id, t.changed AS changed,
       if(n.noise_pairs = 0, NULL, n.changed) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed - n.changed) AS personalization,
       t.rank1_moved AS rank1_moved, if(n.noise_pairs = 0, NULL, n.rank1_moved) AS rank1_moved_noise,
       t.pairs AS pairs, n.noise_pairs AS noise_pairs
FROM
(
    SELECT study_id, avg(arrayAvg(changed)) AS changed, avg(rank1_moved) AS rank1_moved, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id
) AS t
LEFT JOIN
(
    SELECT study_id, avg(arrayAvg(changed)) AS changed, avg(rank1_moved) AS rank1_moved,
           count() AS noise_pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id
) AS n ON n.study_id = t.study_id;
