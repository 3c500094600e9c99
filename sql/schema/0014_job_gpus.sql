-- Jobs on GPUs: which job held which GPU when (job_gpus), what Slurm says a job used, and the thresholds
-- of the efficiency notes (`wanka jobstats`).
--
-- job_gpus (a view) says it from every source a cluster has (warehouse/attribution.py):
--   'dcgm_hpc_job'    the `hpc_job` label dcgm-exporter adds with --hpc-job-mapping-dir; one row
--                     per job, GPU (or MIG instance) and stretch of scrapes that carried it
--   'kubernetes_pod'  the `pod`/`namespace` labels of dcgm-exporter's Kubernetes mode; the job id
--                     is 'namespace/pod'
--   'scontrol'        `scontrol show job -d --oneliner`: Slurm's GPU indices (GRES IDX) per node
--   'whole_node'      a job that holds all GPUs of its nodes (exclusive, or gpus = the nodes'
--                     GPUs) on hosts whose exporter names no jobs: exact, though no source named
--                     the GPUs
--   'ambiguous'       a job that shares such a node and nothing says which GPUs: one row per
--                     node with gpu NULL, never a guess
-- `exact` is false only for 'ambiguous'. Intervals are half-open: start_at <= ts < end_at; an
-- open one (end_at NULL) is still held. For label sources end_at is 1 ms after the last sample
-- that carried the label, so the interval covers exactly the samples that did; a stretch ends
-- where the GPU went more than 5 minutes without a sample carrying the label.
--
-- Two stores behind it, so that telemetry attributed by its labels never makes the per-job
-- dynamic tables recompute anything:
-- gpu_attribution is what the per-job tables join the samples with (sql/dynamic/
-- job_gpu_usage_daily.sql): the interval sources' rows, and for every GPU that sent telemetry
-- one row with source 'labels' and no job — what its samples that name their job join. It
-- changes when a job starts or ends on an interval source and when a GPU reports for the first
-- time; the label stretches, which grow with every scrape, live apart in
-- wanka.job_label_stretches, which nothing derives from.
-- table gpu_attribution: tracked; demo; lake
CREATE TABLE gpu_attribution (
    job_id              VARCHAR,            -- NULL on 'labels' rows
    host                VARCHAR NOT NULL,
    gpu                 INTEGER,            -- index on the host; NULL when ambiguous
    uuid                VARCHAR,
    gpu_instance        VARCHAR,            -- MIG GPU instance id (DCGM GPU_I_ID); NULL: whole GPU
    start_at            TIMESTAMPTZ,
    end_at              TIMESTAMPTZ,        -- exclusive; NULL while held
    source              VARCHAR NOT NULL,   -- 'labels' or one of job_gpus' sources
    exact               BOOLEAN NOT NULL DEFAULT true,
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);

@include(parts/tracked_table.sql, table=gpu_attribution);

CREATE TABLE wanka.job_label_stretches (
    job_id              VARCHAR NOT NULL,
    host                VARCHAR NOT NULL,
    gpu                 INTEGER,
    uuid                VARCHAR,
    gpu_instance        VARCHAR,
    source              VARCHAR NOT NULL,   -- 'dcgm_hpc_job' | 'kubernetes_pod'
    start_at            TIMESTAMPTZ NOT NULL,  -- the first sample carrying the label
    last_ts             TIMESTAMPTZ NOT NULL   -- the last one
);

-- What the whole-node rows were last derived from: batch ids, row counts and change sequences
-- of jobs, nodes and gpu_attribution, as text (warehouse/attribution.py `sync_if_needed`).
CREATE TABLE wanka.attribution_state (synced_to VARCHAR NOT NULL);
INSERT INTO wanka.attribution_state VALUES ('');

-- table job_gpus: view
CREATE VIEW job_gpus AS
SELECT job_id, host, gpu, uuid, gpu_instance, start_at, end_at, source, exact
FROM gpu_attribution WHERE source <> 'labels'
UNION ALL
SELECT job_id, host, gpu, uuid, gpu_instance, start_at, last_ts + INTERVAL 1 MILLISECOND, source, true
FROM wanka.job_label_stretches;

-- What Slurm says a job asked for and used: `Timelimit`, and with Slurm >= 23.02 built with NVML
-- the `gres/gpuutil` (percent) and `gres/gpumem` (bytes, shown with K/M/G suffixes) of
-- TRESUsageInAve / TRESUsageInMax. DuckDB adds columns only at the end and the change logs copy
-- rows with SELECT *, so jobs and job_steps are rebuilt with the new columns before batch_id,
-- their triggers (0005's, then 0007's, in that order) and logs made again — in this one step's
-- transaction: interrupted, the file is as it was.
CREATE TABLE jobs_v14 (
    job_id              VARCHAR NOT NULL,
    job_name            VARCHAR,
    user                VARCHAR,
    account             VARCHAR,
    partition           VARCHAR,
    qos                 VARCHAR,
    cluster             VARCHAR,
    submit_at           TIMESTAMPTZ,
    eligible_at         TIMESTAMPTZ,
    start_at            TIMESTAMPTZ,
    end_at              TIMESTAMPTZ,
    elapsed_s           DOUBLE,
    state               VARCHAR,
    state_reason        VARCHAR,
    gpus                INTEGER,
    gpu_type            VARCHAR,
    nodes               INTEGER,
    node_list           VARCHAR[],
    cpus                INTEGER,
    exit_code           VARCHAR,
    derived_exit_code   VARCHAR,
    time_limit_s        DOUBLE,             -- sacct Timelimit / scontrol TimeLimit; NULL: unlimited
    exclusive           BOOLEAN,            -- the job holds its nodes whole (scontrol OverSubscribe=NO)
    gpu_util_ave        DOUBLE,             -- TRESUsageInAve gres/gpuutil, percent
    gpu_util_max        DOUBLE,             -- TRESUsageInMax gres/gpuutil, percent
    gpu_mem_ave_mib     DOUBLE,             -- TRESUsageInAve gres/gpumem, MiB
    gpu_mem_max_mib     DOUBLE,             -- TRESUsageInMax gres/gpumem, MiB
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);
INSERT INTO jobs_v14 BY NAME SELECT * FROM jobs;
CREATE TABLE job_steps_v14 (
    job_id              VARCHAR NOT NULL,
    step_id             VARCHAR NOT NULL,
    step_name           VARCHAR,
    start_at            TIMESTAMPTZ,
    end_at              TIMESTAMPTZ,
    elapsed_s           DOUBLE,
    state               VARCHAR,
    state_reason        VARCHAR,
    gpus                INTEGER,
    nodes               INTEGER,
    node_list           VARCHAR[],
    cpus                INTEGER,
    exit_code           VARCHAR,
    max_rss_bytes       BIGINT,
    total_cpu_s         DOUBLE,
    gpu_util_ave        DOUBLE,
    gpu_util_max        DOUBLE,
    gpu_mem_ave_mib     DOUBLE,
    gpu_mem_max_mib     DOUBLE,
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);
INSERT INTO job_steps_v14 BY NAME SELECT * FROM job_steps;
DROP TABLE jobs;       -- and its triggers
DROP TABLE job_steps;
ALTER TABLE jobs_v14 RENAME TO jobs;
ALTER TABLE job_steps_v14 RENAME TO job_steps;

ALTER TABLE wanka."changes_jobs" RENAME TO "changes_jobs_v13";
@include(parts/change_rows_table.sql, table=jobs);
INSERT INTO wanka."changes_jobs" BY NAME SELECT * FROM wanka."changes_jobs_v13";
DROP TABLE wanka."changes_jobs_v13";
ALTER TABLE wanka."changes_job_steps" RENAME TO "changes_job_steps_v13";
@include(parts/change_rows_table.sql, table=job_steps);
INSERT INTO wanka."changes_job_steps" BY NAME SELECT * FROM wanka."changes_job_steps_v13";
DROP TABLE wanka."changes_job_steps_v13";

@include(parts/change_count_triggers.sql, table=jobs);
@include(parts/change_rows_triggers.sql, table=jobs);

@include(parts/change_count_triggers.sql, table=job_steps);
@include(parts/change_rows_triggers.sql, table=job_steps);

-- The thresholds of `wanka jobstats`' notes and the waste analyses, one row per rule; an admin
-- edits `threshold` (UPDATE wanka.efficiency_rules SET threshold = 10 WHERE rule = 'low_util').
-- A rule speaks only of jobs that ran at least min_elapsed_s.
CREATE TABLE wanka.efficiency_rules (
    rule                VARCHAR PRIMARY KEY,
    threshold           DOUBLE NOT NULL,
    unit                VARCHAR NOT NULL,
    min_elapsed_s       DOUBLE NOT NULL DEFAULT 600,
    description         VARCHAR NOT NULL
);
INSERT INTO wanka.efficiency_rules VALUES
    ('idle_gpu', 1, 'percent', 600,
     'a GPU whose mean utilisation over the job is below this did not work: "did not use N of M GPUs"'),
    ('low_util', 25, 'percent', 600,
     'the job''s mean GPU utilisation over its GPUs is below this'),
    ('low_gpu_memory', 25, 'percent', 600,
     'the most GPU memory the job used is below this share of the memory its GPUs have'),
    ('time_limit', 3, 'ratio', 600,
     'the time limit is more than this many times the elapsed time (of a finished job)'),
    ('oversized_gpu', 20, 'percent', 600,
     'the most memory used is below this share of a GPU with at least 40 GB: a smaller GPU or a MIG slice would do'),
    ('idle_minutes', 30, 'minutes', 0,
     'idle_gpu_jobs lists jobs whose GPUs sat at 0 % for at least this long');

-- The shipped dynamic tables (sql/dynamic/) this warehouse has been given: the first wanka
-- command that writes to a warehouse creates those it was never given (warehouse/dynamic/
-- shipped.py `ensure_shipped`), so a table a person dropped stays dropped. The ones an older
-- wanka created count as given.
CREATE TABLE wanka.shipped_tables (
    name                VARCHAR PRIMARY KEY,
    given_at            TIMESTAMPTZ NOT NULL
);
INSERT INTO wanka.shipped_tables SELECT name, now() FROM wanka.dynamic_tables
WHERE name IN ('energy_cluster_daily', 'gpu_hourly_host', 'job_gpu_hours_daily', 'xid_errors_by_model');
