-- Frozen n_candidates quintiles (issue 38): once an experiment's analysis plan fixes the
-- quintile boundaries, a quintile is a page condition (its n_candidates_bucket in
-- (b_{k-1}, b_k]) and the worker keeps it as a named subset, like `box`.
--
-- arrangement_quintile_bounds: the boundaries the worker keys the experiment's per-install
-- rows by, one row per change (rows are only added). Written when a plan version whose
-- quintiles differ from the previous version's is stored (registration or amendment,
-- `plan freeze-quintiles` among them; ingest/plans.py), and by the worker when it finds a
-- plan whose quintiles no row states yet (studies/arrangement/write/quintile_rekey.py).
-- `n_candidates` and `no_ads_no_box_n_candidates` are the plan's kept cut points of each
-- family ([] = not frozen: moving boundaries). `ready = 0`: the experiment's per-install rows
-- are being recomputed with them; the worker adds the same row with `ready = 1` once every row
-- follows them. The latest row of an experiment is the one with the greatest
-- (plan_version, ready, written_at).
CREATE TABLE IF NOT EXISTS arrangement_quintile_bounds
(
    experiment_id              String,
    plan_version               UInt32,
    plan_sha256                FixedString(64),
    n_candidates               Array(Int16),
    no_ads_no_box_n_candidates Array(Int16),
    ready                      UInt8,
    written_at                 DateTime64(6, 'UTC')
)
ENGINE = MergeTree
ORDER BY (experiment_id, plan_version, ready, written_at);

-- The study-wide per-install rows and the closed days' sums gain the page's quintile in each
-- family as part of their page context (0: no frozen boundaries, no figure shown, or, for the
-- second, not a page without ads or box), and every row of the three tables the plan version
-- whose boundaries it follows (quintiles_version; 0: none frozen). Rows of an older version are
-- deleted once the experiment's rows are recomputed.
ALTER TABLE agg_arrangement_install
    ADD COLUMN IF NOT EXISTS n_candidates_quintile UInt8 AFTER ssr_c1_c2,
    ADD COLUMN IF NOT EXISTS no_ads_no_box_quintile UInt8 AFTER n_candidates_quintile,
    ADD COLUMN IF NOT EXISTS quintiles_version UInt32 DEFAULT 0,
    MODIFY ORDER BY (experiment_id, engine, install_id, arm, install_age_days, identified,
                     ads_present, box_present, ssr_c1_c2, n_candidates_quintile,
                     no_ads_no_box_quintile);

ALTER TABLE agg_arrangement_install_closed
    ADD COLUMN IF NOT EXISTS n_candidates_quintile UInt8 AFTER ssr_c1_c2,
    ADD COLUMN IF NOT EXISTS no_ads_no_box_quintile UInt8 AFTER n_candidates_quintile,
    ADD COLUMN IF NOT EXISTS quintiles_version UInt32 DEFAULT 0,
    MODIFY ORDER BY (experiment_id, engine, install_id, arm, install_age_days, identified,
                     ads_present, box_present, ssr_c1_c2, n_candidates_quintile,
                     no_ads_no_box_quintile);

ALTER TABLE agg_arrangement_install_subset
    ADD COLUMN IF NOT EXISTS quintiles_version UInt32 DEFAULT 0;
