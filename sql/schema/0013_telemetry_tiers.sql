-- The downsampling tiers of telemetry: per series and minute (wanka.gpu_tier_1m) or hour
-- (wanka.gpu_tier_1h), the exact partial states of its samples with a value, so coarser answers
-- follow without the raw samples: how many, their sum, min, max, and the last value with its
-- time (the last by time; of samples at one time, the largest value, so a recompute agrees).
--
-- Keyed by series id, as the samples are, so a tier row has no string: a minute of a series at
-- 60 s scrapes is about the size of its one sample. A bucket of one sample stores only its sum
-- (min, max and last are the sum then; NULL here, filled in by the views), which is most rows of
-- the 1-minute tier at 60 s scrapes.
--
-- warehouse/telemetry_tiers.py folds new batches into them on the scheduler (before retention
-- drops anything), past the watermark in wanka.tier_state, and rebuilds the buckets that an
-- UPDATE or DELETE of gpu_metrics noted in wanka.tier_dirty — except buckets older than what
-- retention still holds whole. Writers only append, so no two transactions update one bucket.
-- Retention drops raw samples only: the tiers keep the month the raw rows no longer cover, and
-- what they hold for a dropped range never changes.
--
-- gpu_metrics_1m and gpu_metrics_1h are the tiers with the series' labels, as gpu_metrics is
-- the samples with them; queries over ranges retention dropped read these. (Their role line,
-- `-- table NAME: view`, says what warehouse/tables.py knows of them: a view over wanka's own
-- tables, read only.)
CREATE TABLE wanka.gpu_tier_1m (
    series_id           INTEGER NOT NULL,
    bucket              TIMESTAMPTZ NOT NULL,  -- the minute's start
    samples             INTEGER NOT NULL,      -- samples with a value in the bucket
    value_sum           DOUBLE,
    value_min           DOUBLE,                -- NULL: one sample, value_sum is it
    value_max           DOUBLE,
    value_last          DOUBLE,
    last_ts             TIMESTAMPTZ NOT NULL   -- the time of the last sample
);
CREATE TABLE wanka.gpu_tier_1h (
    series_id           INTEGER NOT NULL,
    bucket              TIMESTAMPTZ NOT NULL,  -- the hour's start
    samples             INTEGER NOT NULL,
    value_sum           DOUBLE,
    value_min           DOUBLE,
    value_max           DOUBLE,
    value_last          DOUBLE,
    last_ts             TIMESTAMPTZ NOT NULL
);

-- The newest batch folded into the tiers, and the samples an UPDATE or DELETE touched since.
-- From 0: the first fold (the next scheduler pass) builds the tiers of a warehouse's samples.
CREATE TABLE wanka.tier_state (watermark BIGINT NOT NULL);
INSERT INTO wanka.tier_state VALUES (0);
CREATE TABLE wanka.tier_dirty (series_id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL);

-- table gpu_metrics_1m: view
CREATE VIEW gpu_metrics_1m AS
SELECT t.bucket, r.metric, r.host, r.gpu, r.uuid, r.model, r.labels, t.samples, t.value_sum,
       coalesce(t.value_min, t.value_sum) AS value_min,
       coalesce(t.value_max, t.value_sum) AS value_max,
       coalesce(t.value_last, t.value_sum) AS value_last, t.last_ts
FROM wanka.gpu_tier_1m t JOIN wanka.gpu_series r ON r.series_id = t.series_id;
-- table gpu_metrics_1h: view
CREATE VIEW gpu_metrics_1h AS
SELECT t.bucket, r.metric, r.host, r.gpu, r.uuid, r.model, r.labels, t.samples, t.value_sum,
       coalesce(t.value_min, t.value_sum) AS value_min,
       coalesce(t.value_max, t.value_sum) AS value_max,
       coalesce(t.value_last, t.value_sum) AS value_last, t.last_ts
FROM wanka.gpu_tier_1h t JOIN wanka.gpu_series r ON r.series_id = t.series_id;
