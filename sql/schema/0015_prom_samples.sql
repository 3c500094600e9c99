-- Prometheus remote_write (warehouse/remote_write): DCGM series go to gpu_metrics; every other
-- series (node_exporter, kube-state-metrics, Prometheus's own `up`, ...) to prom_samples, one row
-- per sample with its labels exactly as they arrived, so the series can be rebuilt.
--
-- table prom_samples: tracked
CREATE TABLE prom_samples (
    ts                  TIMESTAMPTZ NOT NULL,
    metric              VARCHAR NOT NULL,   -- the __name__ label
    labels              VARCHAR,            -- every other label, a JSON object in sorted order
    value               DOUBLE,             -- NaN and ±Inf kept (a staleness marker is not a value)
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);

@include(parts/tracked_table.sql, table=prom_samples);

-- Staleness markers (the NaN with bits 0x7ff0000000000002 Prometheus writes when a series
-- disappears from a scrape): where a series ended, not a value. One row per marker, of either
-- table's series: labels as in prom_samples (all but __name__, Hostname and the rest included).
CREATE TABLE wanka.stale_markers (
    ts                  TIMESTAMPTZ NOT NULL,
    metric              VARCHAR NOT NULL,
    labels              VARCHAR,
    batch_id            BIGINT
);

-- What each remote_write delivery did, for /metrics and for people: one row per stored batch.
CREATE TABLE wanka.remote_write_batches (
    batch_id            BIGINT NOT NULL,
    received_at         TIMESTAMPTZ NOT NULL,
    requests            INTEGER NOT NULL,   -- requests folded into this one transaction
    samples             BIGINT NOT NULL,    -- samples received
    stored_gpu          BIGINT NOT NULL,    -- new samples stored in gpu_metrics
    stored_other        BIGINT NOT NULL,    -- ... in prom_samples
    duplicates          BIGINT NOT NULL,    -- samples already stored (a retried delivery)
    stale_markers       BIGINT NOT NULL
);
