-- One row per round and query (agg_personalization_rounds): how complete it is (state:
-- complete, waiting, incomplete) and the lock-step skew.
CREATE OR REPLACE VIEW personalization_rounds AS
SELECT study_id, round_id, query, query_category, engine, round_started_at, first_received_at,
       skew_ms, profiles_expected, profiles_received, profiles_failed, late, state
FROM agg_personalization_rounds FINAL;
