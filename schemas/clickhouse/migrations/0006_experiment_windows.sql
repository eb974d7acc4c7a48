-- CTR per position and arm in consecutive time windows (1 minute, 1 hour, 1 day, or any
-- multiple of 10 seconds) with a 95% clustered-bootstrap interval per window: the live
-- view of a running study. Read from the 10-second per-install slices after
-- preprocessing, with the same weights as experiment_ctr (bootstrap seed `seed`).
--   SELECT * FROM experiment_ctr_windows(experiment = 'demo', engine = 'google',
--       subset = 'all', window_seconds = 3600, since = '2026-11-01 00:00:00',
--       until = '2026-11-02 00:00:00', burn_in_days = 4, seed = 0);
-- since is inclusive, until exclusive (UTC). The weight thresholds are P(W <= k) for
-- W ~ Poisson(1) (checked by a test).

CREATE VIEW IF NOT EXISTS experiment_ctr_windows AS
WITH per_install AS
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
                  0)
    GROUP BY window_start, install_id, arm
),
weighted AS
(
    SELECT window_start, arm, b, u, c,
           xxHash64(concat(toString({seed:UInt32}), ':', install_id, ':', toString(b)))
               / 18446744073709551616.0 AS u01,
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
