-- Confidence sequences for the analyst: delta_i per arm against a baseline over the whole
-- study, with the 95% asymptotic confidence sequence clustered by install (method:
-- analytics/stats/README.md). Unlike the one-look intervals of experiment_gap, it holds at
-- every moment of the study at once, so it may be re-run as often as one likes and the study
-- stopped the first time it excludes zero. Read from arrangement_install (burn_in_days 0..7).
--   SELECT * FROM experiment_gap_sequential(experiment = 'demo', engine = 'google',
--       subset = 'all', baseline = 'control', burn_in_days = 4);
-- subset: all, ads_or_box, no_ads_no_box, box, ssr_c1_c2, ads_no_box, no_ssr_c1_c2, ads (the
-- study-wide rows keep no n_candidates, so no quintiles: use `report experiment --intervals
-- sequential --subset ...` for those).
-- Each install's influence on R = sum X / sum U is (X_j - R U_j) / mean(U) (every install of
-- the selection counts, with zeros for arms it did not see); for delta the difference of the
-- arm's and the baseline's influence of the same install. The half-width is
-- sd * sqrt(2 (n rho^2 + 1) / (n^2 rho^2) * log(sqrt(n rho^2 + 1) / 0.05)) with n installs
-- and rho^2 = 0.001587230920347513 (tightest at 5,000 installs). `report experiment
-- --intervals sequential` reports the same sequence widened, where needed, to hold the
-- one-look bootstrap interval.
CREATE OR REPLACE VIEW experiment_gap_sequential AS
WITH per_install AS
(
    SELECT install_id, arm, toFloat64(sum(units)) AS u,
           arrayMap(x -> toFloat64(x), sumForEach(clicks)) AS c
    FROM arrangement_install
    WHERE experiment_id = {experiment:String} AND engine = {engine:String}
      AND install_age_days >= {burn_in_days:UInt8} AND identified = 1
      AND multiIf({subset:String} = 'all', 1,
                  {subset:String} = 'ads_or_box', ads_present = 1 OR box_present = 1,
                  {subset:String} = 'no_ads_no_box', ads_present = 0 AND box_present = 0,
                  {subset:String} = 'box', box_present = 1,
                  {subset:String} = 'ssr_c1_c2', ssr_c1_c2 = 1,
                  {subset:String} = 'ads_no_box', ads_present = 1 AND box_present = 0,
                  {subset:String} = 'no_ssr_c1_c2', ssr_c1_c2 = 0,
                  {subset:String} = 'ads', ads_present = 1,
                  0)
    GROUP BY install_id, arm
),
n_installs AS (SELECT toFloat64(uniqExact(install_id)) AS n FROM per_install),
totals AS
(
    SELECT arm, sum(u) AS total_u, sumForEach(c) AS total_c,
           arrayMap(x -> x / total_u, sumForEach(c)) AS ratio
    FROM per_install GROUP BY arm
),
influence AS
(
    SELECT p.install_id AS install_id, p.arm AS arm,
           arrayMap((x, r) -> (x - r * p.u) / (t.total_u / (SELECT n FROM n_installs)), p.c, t.ratio) AS psi
    FROM per_install AS p INNER JOIN totals AS t ON t.arm = p.arm
),
squares AS
(
    SELECT arm, sumForEach(arrayMap(x -> x * x, psi)) AS sum_sq FROM influence GROUP BY arm
),
cross_terms AS
(
    SELECT a.arm AS arm, sumForEach(arrayMap((x, y) -> x * y, a.psi, b.psi)) AS sum_cross
    FROM influence AS a INNER JOIN influence AS b ON a.install_id = b.install_id
    WHERE b.arm = {baseline:String} AND a.arm != {baseline:String}
    GROUP BY a.arm
),
rho AS (SELECT 0.001587230920347513 AS r2, (SELECT n FROM n_installs) AS n)
SELECT t.arm AS arm, position,
       t.ratio[position] - b.ratio[position] AS delta,
       sqrt(greatest(s.sum_sq[position] + bs.sum_sq[position]
                     - 2 * ifNull(x.sum_cross[position], 0), 0) / (rho.n - 1)) AS sd,
       sqrt(2 * (rho.n * rho.r2 + 1) / (rho.n * rho.n * rho.r2)
            * log(sqrt(rho.n * rho.r2 + 1) / 0.05)) AS factor,
       delta - sd * factor AS cs_low,
       delta + sd * factor AS cs_high,
       rho.n AS installs
FROM totals AS t
CROSS JOIN (SELECT ratio FROM totals WHERE arm = {baseline:String}) AS b
INNER JOIN squares AS s ON s.arm = t.arm
CROSS JOIN (SELECT sum_sq FROM squares WHERE arm = {baseline:String}) AS bs
LEFT JOIN cross_terms AS x ON x.arm = t.arm
CROSS JOIN rho
ARRAY JOIN range(1, 11) AS position
WHERE t.arm != {baseline:String}
ORDER BY arm, position;
