-- The paper's Figure 16: where new rank-1 results came from and where old ones went, per
-- treatment (kind 'treatment') and for the noise pair; rank 0 = not on the page. Pairs
-- whose movement is not known (255) are left out.
CREATE OR REPLACE VIEW personalization_rank1 AS
SELECT study_id, links, kind, treatment, 'came_from' AS direction, rank1_from AS rank,
       count() AS pairs
FROM personalization_pairs
WHERE rank1_moved = 1 AND rank1_from != 255
GROUP BY study_id, links, kind, treatment, rank
UNION ALL
SELECT study_id, links, kind, treatment, 'moved_to' AS direction, rank1_to AS rank,
       count() AS pairs
FROM personalization_pairs
WHERE rank1_moved = 1 AND rank1_to != 255
GROUP BY study_id, links, kind, treatment, rank;
