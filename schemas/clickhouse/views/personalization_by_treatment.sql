-- Personalization (Hannak et al.), from the pairs the worker compares per round; every view
-- has links ('primary', the paper's, or 'organic'): filter on it. Per treatment value: mean Jaccard and edit distance
-- against the control, the same for the control/twin pair (the paper's control bars), and
-- the share of results changed.
-- The noise floor and personalization are NULL when the study has no control/twin pair to
-- measure noise with (say the twin was blocked every round), never a noise floor of 0.
-- changed: results changed over results compared, pooled over pairs (the paper's ratio); a
-- rank empty on both pages is no result.
CREATE OR REPLACE VIEW personalization_by_treatment AS
SELECT t.study_id AS study_id, t.links AS links, t.treatment AS treatment, t.jaccard AS jaccard,
       if(n.noise_pairs = 0, NULL, n.jaccard) AS jaccard_noise, t.edit_distance AS edit_distance,
       if(n.noise_pairs = 0, NULL, n.edit_distance) AS edit_distance_noise, t.changed AS changed,
       if(n.noise_pairs = 0, NULL, n.changed) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed - n.changed) AS personalization, t.pairs AS pairs
FROM
(
    SELECT study_id, links, treatment, avg(jaccard) AS jaccard, avg(edit_distance) AS edit_distance,
           sum(arraySum(changed)) / nullIf(sum(length(changed)), 0) AS changed, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, links, treatment
) AS t
LEFT JOIN
(
    SELECT study_id, links, avg(jaccard) AS jaccard, avg(edit_distance) AS edit_distance,
           sum(arraySum(changed)) / nullIf(sum(length(changed)), 0) AS changed, count() AS noise_pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id, links
) AS n ON n.study_id = t.study_id AND n.links = t.links;
