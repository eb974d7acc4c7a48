-- CTR per position and arm in consecutive time windows (1 minute, 1 hour, 1 day, or any
-- multiple of 10 seconds) with a 95% clustered-bootstrap interval per window: the live
-- view of a running study, read from the 10-second per-install slices. A parameterised view:
--   SELECT * FROM experiment_ctr_windows(experiment = 'demo', engine = 'google',
--       subset = 'all', window_seconds = 3600, since = '2026-11-01 00:00:00',
--       until = '2026-11-02 00:00:00', burn_in_days = 4, seed = 0);
-- since is inclusive, until exclusive (UTC). subset, preprocessing and bootstrap weights as
-- in experiment_ctr.
CREATE OR REPLACE VIEW experiment_ctr_windows AS
WITH
(
    SELECT quantilesExactWeighted(0.2, 0.4, 0.6, 0.8)(n_candidates_bucket, units)
    FROM agg_arrangement_10s FINAL
    WHERE experiment_id = {experiment:String} AND engine = {engine:String}
      AND slice_start >= {since:DateTime} AND slice_start < {until:DateTime}
      AND install_age_days >= {burn_in_days:UInt16} AND identified = 1
      AND n_candidates_bucket >= 0
      AND {subset:String} LIKE '%n_candidates_q_'
) AS q_all,
(
    SELECT quantilesExactWeighted(0.2, 0.4, 0.6, 0.8)(n_candidates_bucket, units)
    FROM agg_arrangement_10s FINAL
    WHERE experiment_id = {experiment:String} AND engine = {engine:String}
      AND slice_start >= {since:DateTime} AND slice_start < {until:DateTime}
      AND install_age_days >= {burn_in_days:UInt16} AND identified = 1
      AND n_candidates_bucket >= 0 AND ads_present = 0 AND box_present = 0
      AND {subset:String} LIKE '%n_candidates_q_'
) AS q_plain,
per_install AS
(
    SELECT toStartOfInterval(slice_start, toIntervalSecond({window_seconds:UInt32})) AS window_start,
           install_id, arm, sum(units) AS u, sumForEach(clicks) AS c
    FROM agg_arrangement_10s FINAL
    WHERE experiment_id = {experiment:String} AND engine = {engine:String}
      AND slice_start >= {since:DateTime} AND slice_start < {until:DateTime}
      AND install_age_days >= {burn_in_days:UInt16} AND identified = 1
      AND multiIf({subset:String} = 'all', 1,
                  {subset:String} = 'ads_or_box', ads_present = 1 OR box_present = 1,
                  {subset:String} = 'no_ads_no_box', ads_present = 0 AND box_present = 0,
                  {subset:String} = 'box', box_present = 1,
                  {subset:String} = 'ssr_c1_c2', ssr_c1_c2 = 1,
                  {subset:String} = 'ads_no_box', ads_present = 1 AND box_present = 0,
                  {subset:String} = 'no_ssr_c1_c2', ssr_c1_c2 = 0,
                  {subset:String} = 'ads', ads_present = 1,
                  {subset:String} = 'n_candidates_q1', n_candidates_bucket >= 0 AND n_candidates_bucket <= q_all[1],
                  {subset:String} = 'n_candidates_q2', n_candidates_bucket > q_all[1] AND n_candidates_bucket <= q_all[2],
                  {subset:String} = 'n_candidates_q3', n_candidates_bucket > q_all[2] AND n_candidates_bucket <= q_all[3],
                  {subset:String} = 'n_candidates_q4', n_candidates_bucket > q_all[3] AND n_candidates_bucket <= q_all[4],
                  {subset:String} = 'n_candidates_q5', n_candidates_bucket > q_all[4],
                  {subset:String} = 'no_ads_no_box_n_candidates_q1', ads_present = 0 AND box_present = 0 AND n_candidates_bucket >= 0 AND n_candidates_bucket <= q_plain[1],
                  {subset:String} = 'no_ads_no_box_n_candidates_q2', ads_present = 0 AND box_present = 0 AND n_candidates_bucket > q_plain[1] AND n_candidates_bucket <= q_plain[2],
                  {subset:String} = 'no_ads_no_box_n_candidates_q3', ads_present = 0 AND box_present = 0 AND n_candidates_bucket > q_plain[2] AND n_candidates_bucket <= q_plain[3],
                  {subset:String} = 'no_ads_no_box_n_candidates_q4', ads_present = 0 AND box_present = 0 AND n_candidates_bucket > q_plain[3] AND n_candidates_bucket <= q_plain[4],
                  {subset:String} = 'no_ads_no_box_n_candidates_q5', ads_present = 0 AND box_present = 0 AND n_candidates_bucket > q_plain[4],
                  0)
    GROUP BY window_start, install_id, arm
),
weighted AS
(
    SELECT window_start, arm, b, u, c,
           (bitXor((bitXor((bitXor((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), bitShiftRight((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), 30)) * 13787848793156543929), bitShiftRight((bitXor((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), bitShiftRight((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), 30)) * 13787848793156543929), 27)) * 10723151780598845931), bitShiftRight((bitXor((bitXor((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), bitShiftRight((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), 30)) * 13787848793156543929), bitShiftRight((bitXor((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), bitShiftRight((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), 30)) * 13787848793156543929), 27)) * 10723151780598845931), 31)) / 18446744073709551616.0) AS u01,
           multiIf(u01 < 0.36787944117144233, 0, u01 < 0.7357588823428847, 1, u01 < 0.9196986029286058, 2, u01 < 0.9810118431238463, 3, u01 < 0.9963401531726563, 4, u01 < 0.9994058151824183, 5, u01 < 0.999916758850712, 6, u01 < 0.9999897508033253, 7, u01 < 0.999998874797402, 8, 9) AS w
    FROM per_install
    ARRAY JOIN range(200) AS b
),
replicates AS
(
    SELECT window_start, arm, b, sum(w * u) AS wu, sumForEach(arrayMap(x -> x * w, c)) AS wc
    FROM weighted
    GROUP BY window_start, arm, b
),
points AS
(
    SELECT window_start, arm, sum(u) AS units, uniqExact(install_id) AS installs, sumForEach(c) AS clicks
    FROM per_install
    GROUP BY window_start, arm
)
SELECT p.window_start AS window_start, p.arm AS arm, r AS position, p.units AS units,
       p.installs AS installs, p.clicks[r] / p.units AS ctr, q.ci_low AS ci_low, q.ci_high AS ci_high
FROM points AS p
ARRAY JOIN range(1, 11) AS r
LEFT JOIN
(
    SELECT window_start, arm, r, quantileExactInclusive(0.025)(wc[r] / wu) AS ci_low,
           quantileExactInclusive(0.975)(wc[r] / wu) AS ci_high
    FROM replicates ARRAY JOIN range(1, 11) AS r
    WHERE wu > 0
    GROUP BY window_start, arm, r
) AS q ON q.window_start = p.window_start AND q.arm = p.arm AND q.r = r
ORDER BY window_start, arm = 'control' DESC, arm, position;
