-- The parser's coverage of each result page: the share of its visible blocks that a rule
-- claimed (NULL: not a parsed result page, or sent by a crawler older than issue 13). Below
-- 0.8 (schemas.events.KNOWN_LAYOUT) the page has a layout the rules do not know, and its
-- organic results may be incomplete: `report personalization` counts such pages.
-- The view is recreated because a view's `*` is expanded when the view is created.

ALTER TABLE raw_serp_snapshots ADD COLUMN IF NOT EXISTS coverage Nullable(Float32);

CREATE OR REPLACE VIEW serp_snapshots AS
SELECT * FROM raw_serp_snapshots FINAL;
