-- Day-to-day consistency (the paper's Figures 12-13), computed by the worker: a profile's
-- first usable page of a query on a day (by sent_at, the crawler's clock) against the
-- previous day it saw that query, with Jaccard and edit distance.
CREATE OR REPLACE VIEW personalization_consistency AS
SELECT study_id, profile_id, role, treatment, query, query_category, links, day, previous_day,
       jaccard, edit_distance
FROM agg_personalization_consistency FINAL;
