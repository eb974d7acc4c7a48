-- Hannak et al.'s Figure 15 splits the experiments into personalized ones (for them, logged
-- in and geolocation) and all others, whose changes are the noise floor. Per study, links and
-- treatment: results changed and compared against the control, the same for the control/twin
-- noise pairs, and personalized = 1 when the treatment's share changed is above the noise
-- floor's by a one-sided two-proportion z test at 5% (z > 1.645; z NULL without noise pairs).
-- `report personalization --personalized` names the group instead.
CREATE OR REPLACE VIEW personalization_treatment_groups AS
SELECT study_id, links, treatment, changed_results, results, noise_changed_results, noise_results,
       z, toUInt8(ifNull(z > 1.645, 0)) AS personalized
FROM
(
    SELECT t.study_id AS study_id, t.links AS links, t.treatment AS treatment,
           t.changed_results AS changed_results, t.results AS results,
           n.changed_results AS noise_changed_results, n.results AS noise_results,
           (t.changed_results + n.changed_results) / (t.results + n.results) AS pooled,
           if(n.results = 0 OR t.results = 0 OR pooled IN (0, 1), NULL,
              (t.changed_results / t.results - n.changed_results / n.results)
              / sqrt(pooled * (1 - pooled) * (1 / t.results + 1 / n.results))) AS z
    FROM
    (
        SELECT study_id, links, treatment, sum(arraySum(changed)) AS changed_results,
               sum(length(changed)) AS results
        FROM personalization_pairs WHERE kind = 'treatment'
        GROUP BY study_id, links, treatment
    ) AS t
    LEFT JOIN
    (
        SELECT study_id, links, sum(arraySum(changed)) AS changed_results, sum(length(changed)) AS results
        FROM personalization_pairs WHERE kind = 'noise'
        GROUP BY study_id, links
    ) AS n ON n.study_id = t.study_id AND n.links = t.links
);
