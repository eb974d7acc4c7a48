-- CTR per arm and position (the paper's Figure 3) for any time range, with 95%
-- clustered-bootstrap intervals. A parameterised view; pass every parameter:
--   SELECT * FROM experiment_ctr(experiment = 'demo', engine = 'google', subset = 'all',
--       since = '2026-01-01', until = '2026-12-31', burn_in_days = 4, seed = 0);
-- subset: all, ads_or_box, no_ads_no_box, box, ssr_c1_c2, ads_no_box, no_ssr_c1_c2, ads,
-- n_candidates_q1..q5 (every page of the selection) and no_ads_no_box_n_candidates_q1..q5
-- (pages without ads or a shopping box; the paper's Figure 6, right), as `report experiment
-- --subset` has them (anything else selects nothing). A quintile's boundaries are the
-- units-weighted quintiles (quantilesExactWeighted(0.2, 0.4, 0.6, 0.8)) of the bucketed
-- "About N results" figure (n_candidates_bucket, 0.1 decade) in the same selection, pages
-- without the figure left out; quintile k holds buckets in (q[k-1], q[k]]. They are read
-- only when a quintile is asked for.
-- Preprocessing: drops each install's first burn_in_days and identified = false events.
-- Bootstrap: 200 replicates, a deterministic Poisson(1) weight per install and replicate,
-- the counter-based weights of analytics/stats/bootstrap.py (the reports' own): u01 is
-- SplitMix64's finalizer of xxHash64('seed:install_id') + (b + 1) * 0x9E3779B97F4A7C15
-- (UInt64 arithmetic wraps) over 2^64; the thresholds are P(W <= k) for W ~ Poisson(1)
-- (tests/test_schemas/test_sql.py checks them against the Python reference).
CREATE OR REPLACE VIEW experiment_ctr AS
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
)
SELECT p.arm AS arm, r AS position, p.units AS units, p.installs AS installs,
       p.clicks[r] / p.units AS ctr, q.ci_low AS ci_low, q.ci_high AS ci_high
FROM points AS p
ARRAY JOIN range(1, 11) AS r
LEFT JOIN
(
    SELECT arm, r, quantileExactInclusive(0.025)(wc[r] / wu) AS ci_low,
           quantileExactInclusive(0.975)(wc[r] / wu) AS ci_high
    FROM replicates ARRAY JOIN range(1, 11) AS r
    WHERE wu > 0
    GROUP BY arm, r
) AS q ON q.arm = p.arm AND q.r = r
ORDER BY arm = 'control' DESC, arm, position;
