-- Per study, root and suggestion: when it was first and last seen, on how many days.
-- The trimmed network (the crawl's trimming rule; emergent roots and all below them dropped),
-- as the paper analyses it; autocomplete_survival_full is the same on the full network.
CREATE OR REPLACE VIEW autocomplete_survival AS
SELECT engine, study_id, 'trimmed' AS network, root, target AS suggestion,
       min(completed_at) AS first_seen, max(completed_at) AS last_seen,
       uniqExact(toDate(completed_at)) AS days
FROM autocomplete_study_edges
WHERE kept
GROUP BY engine, study_id, root, suggestion;
