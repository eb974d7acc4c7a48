-- Personalization (Hannak et al.), from the pairs the worker compares per round; every view
-- has links ('primary', the paper's, or 'organic'): filter on it. Share of results changed at each rank (Figure 5's
-- reading): treatment vs control against the noise floor (control vs twin) of the same
-- study; personalization is the difference. As the paper, the share is over the results at
-- rank r: pairs where neither page fills rank r are not counted (pairs, noise_pairs: the
-- results at rank r).
-- The noise floor and personalization are NULL when the study has no control/twin pair to
-- measure noise with (say the twin was blocked every round), never a noise floor of 0.
CREATE OR REPLACE VIEW personalization_by_rank AS
SELECT t.study_id AS study_id, t.links AS links, t.rank AS rank, t.treatment AS treatment,
       t.changed_treatment AS changed_treatment,
       if(n.noise_pairs = 0, NULL, n.changed_noise) AS changed_noise,
       if(n.noise_pairs = 0, NULL, t.changed_treatment - n.changed_noise) AS personalization,
       t.pairs AS pairs, n.noise_pairs AS noise_pairs
FROM
(
    SELECT study_id, links, treatment, rank, avg(changed[rank]) AS changed_treatment, count() AS pairs
    FROM personalization_pairs ARRAY JOIN arrayEnumerate(changed) AS rank
    WHERE kind = 'treatment'
    GROUP BY study_id, links, treatment, rank
) AS t
LEFT JOIN
(
    SELECT study_id, links, rank, avg(changed[rank]) AS changed_noise, count() AS noise_pairs
    FROM personalization_pairs ARRAY JOIN arrayEnumerate(changed) AS rank
    WHERE kind = 'noise'
    GROUP BY study_id, links, rank
) AS n ON n.study_id = t.study_id AND n.links = t.links AND n.rank = t.rank;
