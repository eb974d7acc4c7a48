-- Per study, root and suggestion: when it was first and last seen, on how many days.
-- The full (untrimmed) network; autocomplete_survival is the same on the trimmed one, as the paper analyses it.
CREATE OR REPLACE VIEW autocomplete_survival_full AS
SELECT engine, study_id, 'full' AS network, root, target AS suggestion,
       min(completed_at) AS first_seen, max(completed_at) AS last_seen,
       uniqExact(toDate(completed_at)) AS days
FROM autocomplete_study_edges
GROUP BY engine, study_id, root, suggestion;
