-- Personalization per query category and overall, and how often the top result moves
-- (Hannak et al. report rank 1 as the most stable rank).

-- Views defined in views/<name>.sql (applied after the migrations):
-- personalization_by_category, personalization_overall.
