-- Personalization per query category and overall, and how often the top result moves
-- (Hannak et al. report rank 1 as the most stable rank).

CREATE VIEW IF NOT EXISTS personalization_by_category AS
SELECT t.study_id AS study_id, t.query_category AS query_category, t.treatment AS treatment,
       t.changed AS changed, n.changed AS changed_noise, t.changed - n.changed AS personalization,
       t.rank1_moved AS rank1_moved, n.rank1_moved AS rank1_moved_noise, t.pairs AS pairs
FROM
(
    SELECT study_id, query_category, treatment, avg(arrayAvg(changed)) AS changed,
           avg(rank1_moved) AS rank1_moved, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, query_category, treatment
) AS t
LEFT JOIN
(
    SELECT study_id, query_category, avg(arrayAvg(changed)) AS changed, avg(rank1_moved) AS rank1_moved
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id, query_category
) AS n ON n.study_id = t.study_id AND n.query_category = t.query_category;

CREATE VIEW IF NOT EXISTS personalization_overall AS
SELECT t.study_id AS study_id, t.changed AS changed, n.changed AS changed_noise,
       t.changed - n.changed AS personalization, t.rank1_moved AS rank1_moved,
       n.rank1_moved AS rank1_moved_noise, t.pairs AS pairs, n.pairs AS noise_pairs
FROM
(
    SELECT study_id, avg(arrayAvg(changed)) AS changed, avg(rank1_moved) AS rank1_moved, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id
) AS t
LEFT JOIN
(
    SELECT study_id, avg(arrayAvg(changed)) AS changed, avg(rank1_moved) AS rank1_moved, count() AS pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id
) AS n ON n.study_id = t.study_id;
