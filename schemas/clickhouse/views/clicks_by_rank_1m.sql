-- Units, impressions and clicks per (experiment, engine, arm, original_rank) and minute of
-- received_at: the six exact 10-second slices of agg_clicks_by_rank_10s of each minute added
-- up. Ranks 1..10 always have a row; ctr = clicks / units (nan without units).
CREATE OR REPLACE VIEW clicks_by_rank_1m AS
SELECT experiment_id, engine, arm, original_rank, minute AS window_start,
       n_units AS units, n_impressions AS impressions, n_clicks AS clicks,
       if(n_units = 0, nan, n_clicks / n_units) AS ctr
FROM
(
    SELECT experiment_id, engine, arm, original_rank, toStartOfMinute(window_start) AS minute,
           sum(units) AS n_units, sum(impressions) AS n_impressions, sum(clicks) AS n_clicks
    FROM agg_clicks_by_rank_10s FINAL
    GROUP BY experiment_id, engine, arm, original_rank, minute
);
