-- Per arm other than the baseline and position: the performativity gap delta (its CTR minus
-- the baseline's) and beta (-delta over the baseline's CTR), for any time range, with 95%
-- clustered-bootstrap intervals; baseline 'control' for the paper's Figure 3. A
-- parameterised view; pass every parameter:
--   SELECT * FROM experiment_gap(experiment = 'demo', engine = 'google', subset = 'box',
--       baseline = 'hide_ads_box', since = '2026-01-01', until = '2026-12-31',
--       burn_in_days = 4, seed = 0);
-- subset, preprocessing and bootstrap weights as in experiment_ctr.
CREATE OR REPLACE VIEW experiment_gap AS
WITH
(
    SELECT quantilesExactWeighted(0.2, 0.4, 0.6, 0.8)(n_candidates_bucket, units)
    FROM arrangement_install_day
    WHERE experiment_id = {experiment:String} AND engine = {engine:String}
      AND day >= {since:Date} AND day <= {until:Date}
      AND install_age_days >= {burn_in_days:UInt16} AND identified = 1
      AND n_candidates_bucket >= 0
      AND {subset:String} LIKE '%n_candidates_q_'
) AS q_all,
(
    SELECT quantilesExactWeighted(0.2, 0.4, 0.6, 0.8)(n_candidates_bucket, units)
    FROM arrangement_install_day
    WHERE experiment_id = {experiment:String} AND engine = {engine:String}
      AND day >= {since:Date} AND day <= {until:Date}
      AND install_age_days >= {burn_in_days:UInt16} AND identified = 1
      AND n_candidates_bucket >= 0 AND ads_present = 0 AND box_present = 0
      AND {subset:String} LIKE '%n_candidates_q_'
) AS q_plain,
per_install AS
(
    SELECT install_id, arm, sum(units) AS u, sumForEach(clicks) AS c
    FROM arrangement_install_day
    WHERE experiment_id = {experiment:String} AND engine = {engine:String}
      AND day >= {since:Date} AND day <= {until:Date}
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
    GROUP BY install_id, arm
),
weighted AS
(
    SELECT arm, b, u, c,
           (bitXor((bitXor((bitXor((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), bitShiftRight((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), 30)) * 13787848793156543929), bitShiftRight((bitXor((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), bitShiftRight((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), 30)) * 13787848793156543929), 27)) * 10723151780598845931), bitShiftRight((bitXor((bitXor((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), bitShiftRight((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), 30)) * 13787848793156543929), bitShiftRight((bitXor((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), bitShiftRight((xxHash64(concat(toString({seed:UInt32}), ':', install_id)) + (toUInt64(b) + 1) * 11400714819323198485), 30)) * 13787848793156543929), 27)) * 10723151780598845931), 31)) / 18446744073709551616.0) AS u01,
           multiIf(u01 < 0.36787944117144233, 0, u01 < 0.7357588823428847, 1, u01 < 0.9196986029286058, 2, u01 < 0.9810118431238463, 3, u01 < 0.9963401531726563, 4, u01 < 0.9994058151824183, 5, u01 < 0.999916758850712, 6, u01 < 0.9999897508033253, 7, u01 < 0.999998874797402, 8, 9) AS w
    FROM per_install
    ARRAY JOIN range(200) AS b
),
replicates AS
(
    SELECT arm, b, sum(w * u) AS wu, sumForEach(arrayMap(x -> x * w, c)) AS wc
    FROM weighted
    GROUP BY arm, b
),
points AS
(
    SELECT arm, sum(u) AS units, uniqExact(install_id) AS installs, sumForEach(c) AS clicks
    FROM per_install
    GROUP BY arm
),
control_points AS (SELECT clicks AS cc, units AS cu FROM points WHERE arm = {baseline:String}),
control_replicates AS (SELECT b, wc AS cwc, wu AS cwu FROM replicates WHERE arm = {baseline:String})
SELECT arm, position,
       any(point_delta) AS delta, quantileExactInclusive(0.025)(rep_delta) AS delta_ci_low,
       quantileExactInclusive(0.975)(rep_delta) AS delta_ci_high,
       any(point_beta) AS beta, quantileExactInclusive(0.025)(rep_beta) AS beta_ci_low,
       quantileExactInclusive(0.975)(rep_beta) AS beta_ci_high
FROM
(
    SELECT rp.arm AS arm, r AS position,
           pt.clicks[r] / pt.units - cp.cc[r] / cp.cu AS point_delta,
           -point_delta / (cp.cc[r] / cp.cu) AS point_beta,
           rp.wc[r] / rp.wu - cr.cwc[r] / cr.cwu AS rep_delta,
           -rep_delta / (cr.cwc[r] / cr.cwu) AS rep_beta
    FROM replicates AS rp
    INNER JOIN control_replicates AS cr ON cr.b = rp.b
    INNER JOIN points AS pt ON pt.arm = rp.arm
    CROSS JOIN control_points AS cp
    ARRAY JOIN range(1, 11) AS r
    WHERE rp.arm != {baseline:String} AND rp.wu > 0 AND cr.cwu > 0
)
GROUP BY arm, position
ORDER BY arm, position;
