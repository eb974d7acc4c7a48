-- Personalization (Hannak et al.), from the pairs the worker compares per round; every view
-- has links ('primary', the paper's, or 'organic'): filter on it. Per query: how personalized it is beyond the noise of
-- the same query.
-- The noise floor and personalization are NULL when the study has no control/twin pair to
-- measure noise with (say the twin was blocked every round), never a noise floor of 0.
-- changed: results changed over results compared, pooled over pairs (the paper's ratio); a
-- rank empty on both pages is no result.
CREATE OR REPLACE VIEW personalization_by_query AS
SELECT t.study_id AS study_id, t.links AS links, t.query AS query, t.query_category AS query_category,
       t.treatment AS treatment, t.changed AS changed,
       if(n.noise_pairs = 0, NULL, n.changed) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed - n.changed) AS personalization, t.jaccard AS jaccard,
       if(n.noise_pairs = 0, NULL, n.jaccard) AS jaccard_noise, t.pairs AS pairs
FROM
(
    SELECT study_id, links, query, any(query_category) AS query_category, treatment,
           sum(arraySum(changed)) / nullIf(sum(length(changed)), 0) AS changed, avg(jaccard) AS jaccard, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, links, query, treatment
) AS t
LEFT JOIN
(
    SELECT study_id, links, query, sum(arraySum(changed)) / nullIf(sum(length(changed)), 0) AS changed, avg(jaccard) AS jaccard,
           count() AS noise_pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id, links, query
) AS n ON n.study_id = t.study_id AND n.links = t.links AND n.query = t.query;
