-- Scraping (warehouse/scrape): the health of each target `wanka serve --scrape-config` or
-- `wanka scrape --once` pulls, as Prometheus shows it on its targets page: the targets of the
-- last round, the table replaced in that round's transaction (its samples went to gpu_metrics and
-- prom_samples through the remote_write store, as one batch per round).
CREATE TABLE wanka.scrape_targets (
    target              VARCHAR NOT NULL,   -- the scrape URL
    labels              VARCHAR,            -- the target's labels (instance, job, file_sd's), JSON
    health              VARCHAR NOT NULL,   -- 'up' or 'down'
    last_scrape         TIMESTAMPTZ NOT NULL,
    duration_s          DOUBLE NOT NULL,    -- of the last scrape
    samples             BIGINT NOT NULL,    -- samples the last scrape returned
    error               VARCHAR,            -- why the last scrape failed; NULL when up
    batch_id            BIGINT              -- the round's batch (NULL when it stored nothing)
);
