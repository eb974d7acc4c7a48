-- One row per compared pair of a round (agg_personalization_link_pairs): kind 'treatment' (a
-- treatment profile against the control) or 'noise' (the control against its twin), on the
-- list named by links ('primary' or 'organic'). changed[i] = 1 when the results at rank i
-- differ, one entry per rank either page fills (a rank empty on both is no result; pairs
-- compared before issue 37 have all 10 ranks); rank1_from / rank1_to say where rank 1 moved (255 = not known: pairs compared
-- before migration 0024).
CREATE OR REPLACE VIEW personalization_pairs AS
SELECT study_id, round_id, query, query_category, engine, round_started_at, links, kind, treatment,
       profile_a, profile_b, jaccard, edit_distance, changed, rank1_moved, rank1_from, rank1_to
FROM agg_personalization_link_pairs FINAL;
