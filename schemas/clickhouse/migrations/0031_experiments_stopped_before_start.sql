-- An experiment stopped before its start day was stored with end < start (the stop route
-- before this migration), a config its own model refuses: every read of it answered 500.
-- A stop before the start now ends the experiment on its start day; such stored configs
-- get a newer row that says so (ReplacingMergeTree keeps the newest by updated_at). The
-- config is the model's compact JSON, so its "end" appears exactly once as "end":"<day>".

INSERT INTO experiments_log (experiment_id, updated_at, status, config)
SELECT experiment_id, now64(6), status,
       replaceOne(config,
                  concat('"end":"', JSONExtractString(config, 'end'), '"'),
                  concat('"end":"', JSONExtractString(config, 'start'), '"'))
FROM experiments_log FINAL
WHERE JSONExtractString(config, 'end') != ''
  AND JSONExtractString(config, 'end') < JSONExtractString(config, 'start');
