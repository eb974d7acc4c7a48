-- Personalization (Hannak et al.), from the pairs the worker compares per round; every view
-- has links ('primary', the paper's, or 'organic'): filter on it. Per study: the share changed and how often the top
-- result moves.
-- The noise floor and personalization are NULL when the study has no control/twin pair to
-- measure noise with (say the twin was blocked every round), never a noise floor of 0.
-- changed: results changed over results compared, pooled over pairs (the paper's ratio); a
-- rank empty on both pages is no result.
CREATE OR REPLACE VIEW personalization_overall AS
SELECT t.study_id AS study_id, t.links AS links, t.changed AS changed,
       if(n.noise_pairs = 0, NULL, n.changed) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed - n.changed) AS personalization,
       t.rank1_moved AS rank1_moved, if(n.noise_pairs = 0, NULL, n.rank1_moved) AS rank1_moved_noise,
       t.pairs AS pairs, n.noise_pairs AS noise_pairs
FROM
(
    SELECT study_id, links, sum(arraySum(changed)) / nullIf(sum(length(changed)), 0) AS changed, avg(rank1_moved) AS rank1_moved, count() AS pairs
    FROM personalization_pairs WHERE kind = 'treatment'
    GROUP BY study_id, links
) AS t
LEFT JOIN
(
    SELECT study_id, links, sum(arraySum(changed)) / nullIf(sum(length(changed)), 0) AS changed, avg(rank1_moved) AS rank1_moved,
           count() AS noise_pairs
    FROM personalization_pairs WHERE kind = 'noise'
    GROUP BY study_id, links
) AS n ON n.study_id = t.study_id AND n.links = t.links;
