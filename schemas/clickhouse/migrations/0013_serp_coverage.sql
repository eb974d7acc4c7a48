-- The parser's coverage of each result page: the share of its visible blocks that a rule
-- claimed (NULL: not a parsed result page, or sent by a crawler older than issue 13). Below
-- 0.8 (schemas.events.KNOWN_LAYOUT) the page has a layout the rules do not know, and its
-- organic results may be incomplete: `report personalization` counts such pages.
-- serp_snapshots shows the column: migrate creates every view again after the migrations.

ALTER TABLE raw_serp_snapshots ADD COLUMN IF NOT EXISTS coverage Nullable(Float32);

-- View defined in views/<name>.sql (applied after the migrations): serp_snapshots.
