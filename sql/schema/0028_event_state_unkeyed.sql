-- wanka.gpu_event_state without its PRIMARY KEY.
--
-- The key's ART index was most of the table on disk and in memory: at 10,000 GPUs (29,856 rows
-- of GPU × event field) it took 5.2 MB of the file against 0.5 MB for the rows, 0.02 B of
-- every sample of a day at 60 s. Ingest now moves the state on with one MERGE INTO of a delta
-- pre-aggregated to a row per key (sql/health/gpu_event_state.sql), under the one writer at a
-- time that ingest already is, so nothing else needs the key.

CREATE TABLE wanka.gpu_event_state_0028 (
    host                VARCHAR NOT NULL,
    gpu                 INTEGER NOT NULL,
    uuid                VARCHAR NOT NULL,
    metric              VARCHAR NOT NULL,
    ts                  TIMESTAMPTZ NOT NULL,
    value               DOUBLE
);
INSERT INTO wanka.gpu_event_state_0028
SELECT host, gpu, uuid, metric, ts, value FROM wanka.gpu_event_state ORDER BY host, gpu, metric;
DROP TABLE wanka.gpu_event_state;
ALTER TABLE wanka.gpu_event_state_0028 RENAME TO gpu_event_state;
