-- The extension's onboarding answers (event install_profile), one row per install: its
-- latest answers (an install may answer again after reinstalling the onboarding page; the
-- last word counts).
CREATE OR REPLACE VIEW install_profiles AS
SELECT install_id,
       argMax(experiment_id, received_at) AS experiment_id,
       argMax(install_day, received_at) AS install_day,
       argMax(extension_version, received_at) AS extension_version,
       argMax(consent, received_at) AS consent,
       argMax(age_band, received_at) AS age_band,
       argMax(search_languages, received_at) AS search_languages,
       argMax(country, received_at) AS country,
       argMax(search_frequency, received_at) AS search_frequency,
       max(received_at) AS answered_at
FROM raw_install_profiles FINAL
GROUP BY install_id;
