-- Published GPU cluster traces that are not jobs or telemetry of our own cluster.
-- (Steps 0008 and 0009 belong to other branches; gaps in numbering are allowed.)

-- GPU duty cycle per container, as in Alibaba's GenAI trace (cluster-trace-v2026-GenAI,
-- pod_gpu_duty_cycle_anon.csv): the share of time a kernel ran on the container's GPU.
-- table gpu_duty_cycle: demo; lake
CREATE TABLE gpu_duty_cycle (
    ts                  TIMESTAMPTZ NOT NULL,
    container           VARCHAR NOT NULL,   -- anonymised container IP (hash)
    cluster             VARCHAR,
    duty_cycle_pct      DOUBLE,             -- %, 0-100
    batch_id            BIGINT
);

-- Model loading (cold start) latencies, as in the same trace (basemodel_update_latency_anon.csv):
-- the time a serving container took to load its base model.
-- table model_load_latency: demo; lake
CREATE TABLE model_load_latency (
    ts                  TIMESTAMPTZ NOT NULL,
    container           VARCHAR NOT NULL,
    cluster             VARCHAR,
    latency_ms          DOUBLE,             -- ms
    batch_id            BIGINT
);
