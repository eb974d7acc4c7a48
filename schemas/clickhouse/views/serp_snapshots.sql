-- One row per SERP snapshot of the personalization crawlers, deduplicated (FINAL). A view's
-- `*` is expanded when it is created; migrate creates it again after every migration, so a
-- column added to raw_serp_snapshots (coverage, consent, loaded_at) shows here.
CREATE OR REPLACE VIEW serp_snapshots AS
SELECT * FROM raw_serp_snapshots FINAL;
