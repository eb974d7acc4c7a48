-- Hannak et al.'s Figure 14: per query category, the cumulative distribution of Jaccard and
-- edit distance of every treatment against the control, "for a single day of search
-- results". Per study, links, day (UTC day of the round's start), category and metric
-- ('jaccard' or 'edit_distance'): each value taken, the pairs at it and cdf = the share of
-- that day's pairs of the category at or below it. Pick one day (`report personalization
-- --section category_cdf --day`; by default the study's first full day).
CREATE OR REPLACE VIEW personalization_category_cdf AS
SELECT study_id, links, day, query_category, metric, value, pairs,
       sum(pairs) OVER (PARTITION BY study_id, links, day, query_category, metric ORDER BY value
                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
       / sum(pairs) OVER (PARTITION BY study_id, links, day, query_category, metric) AS cdf
FROM
(
    SELECT study_id, links, day, query_category, metric, value, count() AS pairs
    FROM
    (
        SELECT study_id, links, toDate(round_started_at) AS day, query_category,
               ['jaccard', 'edit_distance'] AS metrics, [round(jaccard, 6), toFloat64(edit_distance)] AS values
        FROM personalization_pairs WHERE kind = 'treatment'
    )
    ARRAY JOIN metrics AS metric, values AS value
    GROUP BY study_id, links, day, query_category, metric, value
);
