-- Ingest: every row written through an ingest carries the batch that wrote it. Batch ids come
-- from wanka.batch_seq and only grow, so "rows newer than batch N" is a change set.

-- The options that change what the same bytes mean (target table, trace start, ...): the same
-- content with other options is another ingest, not a repeat.
ALTER TABLE wanka.ingest_batches ADD COLUMN options VARCHAR;

ALTER TABLE sites       ADD COLUMN batch_id BIGINT;
ALTER TABLE clusters    ADD COLUMN batch_id BIGINT;
ALTER TABLE nodes       ADD COLUMN batch_id BIGINT;
ALTER TABLE gpu_metrics ADD COLUMN batch_id BIGINT;
ALTER TABLE jobs        ADD COLUMN batch_id BIGINT;
ALTER TABLE job_steps   ADD COLUMN batch_id BIGINT;
ALTER TABLE job_events  ADD COLUMN batch_id BIGINT;

-- Kubernetes pods, as in the Alibaba GPU cluster trace: GPUs may be shared (gpu_milli).
-- table pods: tracked; key (name); demo; lake
CREATE TABLE pods (
    name                VARCHAR NOT NULL,
    namespace           VARCHAR,
    cluster             VARCHAR,
    cpu_milli           BIGINT,
    memory_mib          BIGINT,
    num_gpu             INTEGER,            -- GPUs asked for
    gpu_milli           INTEGER,            -- thousandths of each GPU (1000 = whole GPU)
    gpus                DOUBLE,             -- num_gpu × gpu_milli / 1000: GPU share held
    gpu_spec            VARCHAR[],          -- GPU models the pod may run on (empty: any)
    qos                 VARCHAR,            -- 'LS' | 'BE' | 'Guaranteed' | ...
    pod_phase           VARCHAR,            -- 'Running' | 'Succeeded' | 'Failed' | 'Pending' ...
    created_at          TIMESTAMPTZ,
    scheduled_at        TIMESTAMPTZ,
    deleted_at          TIMESTAMPTZ,
    node                VARCHAR,
    batch_id            BIGINT
);

-- nccl-tests results (all_reduce_perf and friends): one row per message size and placement.
-- table nccl_results: tracked; demo; lake
CREATE TABLE nccl_results (
    run_id              VARCHAR NOT NULL,   -- source name + batch: one run of a test binary
    collective          VARCHAR,            -- 'all_reduce' | 'all_gather' | 'reduce_scatter' | ...
    ranks               INTEGER,            -- GPUs taking part
    hosts               VARCHAR[],
    gpu_model           VARCHAR,
    size_bytes          BIGINT NOT NULL,
    count               BIGINT,             -- elements
    dtype               VARCHAR,
    redop               VARCHAR,
    root                INTEGER,
    placement           VARCHAR NOT NULL,   -- 'out-of-place' | 'in-place'
    time_us             DOUBLE,
    algbw_gbs           DOUBLE,             -- GB/s as nccl-tests prints (1e9 B/s)
    busbw_gbs           DOUBLE,
    wrong               BIGINT,             -- #wrong; NULL when validation was off ('N/A')
    ran_at              TIMESTAMPTZ,
    batch_id            BIGINT
);
