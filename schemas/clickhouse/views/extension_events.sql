-- One row per accepted extension event (serp_view, click), deduplicated by event_id: the
-- raw rows read with FINAL, so a replay after a crash never shows as a second row. A view's
-- `*` is expanded when it is created; migrate creates it again after every migration, so a
-- column added to raw_extension_events shows here.
CREATE OR REPLACE VIEW extension_events AS
SELECT * FROM raw_extension_events FINAL;
