-- The extension's onboarding answers (event install_profile, issue 14): consent and coarse,
-- optional bins (age band, search languages, country, search frequency) per install, for
-- describing the panel and reweighting it to a population. Nothing free-text.

CREATE TABLE IF NOT EXISTS raw_install_profiles
(
    event_id          UUID,
    type              LowCardinality(String),
    schema_version    UInt16,
    sent_at           DateTime64(3, 'UTC'),
    received_at       DateTime64(3, 'UTC'),
    install_id        String,
    install_day       Date,
    extension_version LowCardinality(String),
    experiment_id     LowCardinality(String),
    consent           LowCardinality(String),
    age_band          LowCardinality(Nullable(String)),
    search_languages  Array(LowCardinality(String)),
    country           LowCardinality(Nullable(String)),
    search_frequency  LowCardinality(Nullable(String)),
    INDEX idx_event_id event_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (experiment_id, install_id, received_at, event_id);

-- View defined in views/<name>.sql (applied after the migrations): install_profiles.
