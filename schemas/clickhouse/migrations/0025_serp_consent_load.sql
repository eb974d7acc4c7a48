-- What a SERP crawler did about a consent wall, and when each page had finished loading
-- (issue 18). Until now both were only in the crawler's journal and archive.
--
-- consent: 'none' (no wall on the page), 'accepted' or 'rejected' (the study's consent
-- action pressed that button and the wall went away), 'left' (the study leaves walls: the
-- page was recorded as it was), 'failed' (the button was pressed but the wall stayed).
-- '' for rows stored before this migration (not recorded).
-- loaded_at: when the page had finished loading (HTTP fetcher: the body read; browser: the
-- end of the page's load event, after any consent wall). NULL when no page came, or for
-- rows stored before this migration. Per round, max(loaded_at) - min(loaded_at) is the load
-- skew, as max(sent_at) - min(sent_at) is the send skew.
-- serp_snapshots shows the columns: migrate creates every view again after the migrations.

ALTER TABLE raw_serp_snapshots ADD COLUMN IF NOT EXISTS consent LowCardinality(String) DEFAULT '';

ALTER TABLE raw_serp_snapshots ADD COLUMN IF NOT EXISTS loaded_at Nullable(DateTime64(3, 'UTC'));

-- View defined in views/<name>.sql (applied after the migrations): serp_snapshots.
