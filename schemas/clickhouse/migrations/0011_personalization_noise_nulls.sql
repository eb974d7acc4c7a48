-- The personalization summaries answer NULL for the noise floor and for personalization
-- when there is no control/twin pair to measure noise with (say the twin was blocked
-- every round), instead of a noise floor of 0 that would pass raw change off as
-- personalization. Same columns as before (0008, 0010).

-- Views defined in views/<name>.sql (applied after the migrations): personalization_by_rank,
-- personalization_by_treatment, personalization_by_query, personalization_by_category,
-- personalization_overall.
