-- The paper's Figure 8: how result pages are composed, per experiment and engine. For
-- pages shown (serp_view events, from senders that report them) and for pages that led to a
-- click (click events, every sender), the share with ads on top, with a shopping box (top or
-- side), with any specialized result (SSR), with an SSR at main-column position 2, and with
-- an SSR between the first two organic results (ssr_c1_c2, studies/arrangement/counting.py:
-- SSR_C1_C2), and how many.
--   SELECT * FROM page_composition WHERE experiment_id = 'demo';
CREATE OR REPLACE VIEW page_composition AS
SELECT experiment_id, engine, type AS pages_of,
       count() AS pages,
       countIf(ads_top_count > 0) / count() AS share_with_ads,
       countIf(box != 'none') / count() AS share_with_box,
       countIf(length(ssr_positions) > 0) / count() AS share_with_ssr,
       countIf(has(ssr_positions, 2)) / count() AS share_with_ssr_at_2,
       countIf(has(ssr_positions, arrayFirstIndex(p -> NOT has(ssr_positions, p), range(1, 22)) + 1))
           / count() AS share_with_ssr_c1_c2
FROM extension_events
WHERE page_index = 0
GROUP BY experiment_id, engine, type;
