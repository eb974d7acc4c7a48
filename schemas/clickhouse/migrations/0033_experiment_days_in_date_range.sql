-- An experiment could be registered with a start or end day outside ClickHouse's Date range
-- (0001-01-01, 9999-12-31): the experiments view showed it clamped (1970-01-01, 2149-06-06)
-- while the stored config kept the day, which the model now refuses, so every read of such
-- an experiment would fail. Such configs get a newer row with the days the view showed
-- (ReplacingMergeTree keeps the newest by updated_at; the config is the model's compact
-- JSON, so each day appears once as "start":"<day>" / "end":"<day>").

INSERT INTO experiments_log (experiment_id, updated_at, status, config)
SELECT experiment_id, now64(6), status,
       replaceOne(replaceOne(config,
                             concat('"start":"', s, '"'),
                             concat('"start":"', least(greatest(s, '1970-01-01'), '2149-06-06'), '"')),
                  concat('"end":"', e, '"'),
                  concat('"end":"', least(greatest(e, '1970-01-01'), '2149-06-06'), '"'))
FROM (SELECT experiment_id, status, config,
             JSONExtractString(config, 'start') AS s, JSONExtractString(config, 'end') AS e
      FROM experiments_log FINAL)
WHERE s < '1970-01-01' OR s > '2149-06-06' OR (e != '' AND (e < '1970-01-01' OR e > '2149-06-06'));
