-- The views that pool a root's crawls (survival, associations, social media) pooled every
-- study of that root into one row: a replication or a second audit of the same root could
-- not be told apart from the first, while crawls, churn chains and shocks are per study
-- already. They now group by `study_id` too (the crawl's, from its analysed crawl row, so
-- only analysed crawls count, as before: that row is written last). Summing over studies
-- gives the old pooled `weight`, `crawls`, `mentions` and `suggestions`; `days` is per
-- study. No data changes.

DROP VIEW IF EXISTS autocomplete_survival;

DROP VIEW IF EXISTS autocomplete_survival_full;

DROP VIEW IF EXISTS autocomplete_associations;

DROP VIEW IF EXISTS autocomplete_associations_full;

DROP VIEW IF EXISTS autocomplete_social_mentions;

DROP VIEW IF EXISTS autocomplete_social_mentions_full;

DROP VIEW IF EXISTS autocomplete_social_share;

DROP VIEW IF EXISTS autocomplete_social_share_full;

-- Views defined in views/<name>.sql (applied after the migrations):
-- autocomplete_crawl_studies, autocomplete_study_edges, autocomplete_survival,
-- autocomplete_survival_full, autocomplete_associations, autocomplete_associations_full,
-- autocomplete_social_mentions, autocomplete_social_mentions_full, autocomplete_social_share,
-- autocomplete_social_share_full.
