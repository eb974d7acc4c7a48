-- The engine's coarse market of each extension event (issue 35): the extension now runs on
-- every Google country domain and on Bing whatever its market, and says which, so reports
-- and the SRM check can be split by it. Google: the search domain's last label ('de',
-- 'uk' for google.co.uk, 'com' for google.com); Bing: its mkt parameter lowercased
-- ('de-de'), else its cc ('de'). '' when the page's URL does not say (Bing choosing from its
-- cookie), for events of extensions older than the field (0.1.0, the simulators), and for
-- rows stored before this migration.
-- extension_events shows the column: migrate creates every view again after the migrations.

ALTER TABLE raw_extension_events ADD COLUMN IF NOT EXISTS market LowCardinality(String) DEFAULT '';

-- View defined in views/<name>.sql (applied after the migrations): extension_events.
