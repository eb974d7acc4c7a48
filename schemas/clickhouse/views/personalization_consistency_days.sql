-- Hannak et al.'s Figure 12: day-to-day consistency, one line per account. Per study, links,
-- profile and day pair (previous_day, day; the previous day the profile saw the query, so a
-- skipped day makes a longer step): mean Jaccard and edit distance over the queries compared.
-- Figure 13 (per query category) is the same grouping by category (`report personalization
-- --section consistency_category_days`).
CREATE OR REPLACE VIEW personalization_consistency_days AS
SELECT study_id, links, profile_id, any(role) AS role, any(treatment) AS treatment, previous_day, day,
       count() AS queries, avg(jaccard) AS jaccard, avg(edit_distance) AS edit_distance
FROM personalization_consistency
GROUP BY study_id, links, profile_id, previous_day, day;
