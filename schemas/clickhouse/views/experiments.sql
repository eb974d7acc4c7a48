-- The experiment registry: the newest row of experiments_log per experiment, with the fields
-- of its config (schemas/experiments.py) that queries filter on.
CREATE OR REPLACE VIEW experiments AS
SELECT experiment_id, updated_at, status, config,
       JSONExtract(config, 'arms', 'Map(String, Float64)') AS arms,
       JSONExtractString(config, 'salt') AS salt,
       JSONExtract(config, 'engines', 'Array(String)') AS engines,
       toDate(JSONExtractString(config, 'start')) AS start,
       JSONExtractUInt(config, 'burn_in_days') AS burn_in_days,
       JSONExtractString(config, 'unit_mode') AS unit_mode
FROM experiments_log FINAL;
