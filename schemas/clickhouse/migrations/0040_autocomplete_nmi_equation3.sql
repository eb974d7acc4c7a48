-- RAI's Equation 3 (issue 37): nmi = 2 I(S_t; S_t+1) / (H(S_t) + H(S_t+1)), the paper's
-- normalised mutual information (analytics/stats/autocomplete.py: nmi, docs/method.md).
-- The table's column nmi keeps the earlier pooled reading, 1 - JSD / ln 2, for every row
-- (the views name it nmi_pooled); nmi_eq3 holds Equation 3, which the views name nmi and the
-- shock alerts judge. Crawls analysed before this migration have nmi_eq3 NULL until their
-- study is recomputed (a re-import recomputes the derived rows).

ALTER TABLE agg_autocomplete_crawls ADD COLUMN IF NOT EXISTS nmi_eq3 Nullable(Float64);

-- Views defined in views/<name>.sql (applied after the migrations): autocomplete_crawls,
-- autocomplete_crawls_full.
