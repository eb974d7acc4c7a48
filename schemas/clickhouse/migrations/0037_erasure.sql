-- Withdrawal that erases (issue 35). A volunteer who leaves, or an operator asked to, can
-- have an install's data erased (streams/erasure.py): its rows go from every raw and
-- derived table and the sums over it are recomputed.
--
-- erased_installs: the installs erased, by the SHA-256 of their id (never the id itself).
-- The worker looks a batch's installs up here in the same store step as its insert, and
-- drops an erased install's events (still in the broker, in an ingest replay buffer, or
-- sent again later); ingest refuses them (install_erased) once it has read this table.
CREATE TABLE IF NOT EXISTS erased_installs
(
    install_hash String,
    erasure_id   UUID,
    erased_at    DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree
ORDER BY install_hash;

-- erasure_log: one row per finished erasure, the receipt's content: which install (hash),
-- when, who asked (operator or volunteer), and how many rows went from each table; and the
-- install's erasure key hashes (from its onboarding answers, which are erased), so the
-- volunteer's extension can still fetch the receipt with its secret. No content of any event.
CREATE TABLE IF NOT EXISTS erasure_log
(
    erasure_id   UUID,
    install_hash String,
    requested_by LowCardinality(String),
    started_at   DateTime64(3, 'UTC'),
    finished_at  DateTime64(3, 'UTC'),
    rows_removed Map(String, UInt64),
    erasure_keys_sha256 Array(String)
)
ENGINE = MergeTree
ORDER BY (finished_at, erasure_id);

-- The extension proves it owns an install by a secret it made at installation; its
-- onboarding answers carry the secret's SHA-256 (install_profile.erasure_key_sha256), and
-- POST /v1/participants/erase-own erases only for the secret whose hash is stored here.
ALTER TABLE raw_install_profiles ADD COLUMN IF NOT EXISTS erasure_key_sha256 String DEFAULT '';
