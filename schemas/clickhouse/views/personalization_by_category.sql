-- Personalization (Hannak et al.), from the pairs the worker compares per round; every view
-- has links ('primary', the paper's, or 'organic'): filter on it. Per query category: the share changed and how often the
-- top result moves (rank1_moved; Hannak et al. report rank 1 as the most stable rank).
-- The noise floor and personalization are NULL when the study has no control/twin pair to
-- measure noise with (say the twin was blocked every round), never a noise floor of 0.
-- changed: results changed over results compared, pooled over pairs (the paper's ratio); a
-- rank empty on both pages is no result.
CREATE OR REPLACE VIEW personalization_by_category AS
SELECT t.study_id AS study_id, t.links AS links, t.query_category AS query_category, t.treatment AS treatment,
       t.changed AS changed, if(n.noise_pairs = 0, NULL, n.changed) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed - n.changed) AS personalization,
       t.rank1_moved AS rank1_moved, if(n.noise_pairs = 0, NULL, n.rank1_moved) AS rank1_moved_noise,
       t.pairs AS pairs
FROM
(
    SELECT study_id, links, query_category, treatment, sum(arraySum(changed)) / nullIf(sum(length(changed)), 0) AS changed,
           avg(rank1_moved) AS rank1_moved, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, links, query_category, treatment
) AS t
LEFT JOIN
(
    SELECT study_id, links, query_category, sum(arraySum(changed)) / nullIf(sum(length(changed)), 0) AS changed, avg(rank1_moved) AS rank1_moved,
           count() AS noise_pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id, links, query_category
) AS n ON n.study_id = t.study_id AND n.links = t.links AND n.query_category = t.query_category;
