-- Base tables: what the cluster reports. One row per sample / job / step / host.
-- Columns are stated here once; Python reads them from the database, never repeats them.
-- What wanka does with each table is stated once too, in the `-- table NAME: ...` line above its
-- CREATE TABLE (read by warehouse/tables.py; a comment, so no step changes what it runs):
--   tracked    inserts carry batch ids, updates and deletes are logged (steps 0005, 0007), so
--              dynamic tables over it refresh incrementally
--   key (...)  one row per thing: an ingested row replaces the row with the same key
--   reference  published specs loaded from sql/reference/<table>.csv; change only on reload
--   demo       the demo warehouse loads it (and empties it before a rebuild)
--   lake       `wanka export --lake` writes it as a Delta table

-- Where the hardware lives. Energy analyses join PUE, tariff and grid intensity from here.
-- table sites: tracked; key (site); demo; lake
CREATE TABLE sites (
    site                VARCHAR PRIMARY KEY,
    region              VARCHAR,
    pue                 DOUBLE,     -- facility power / IT power (The Green Grid)
    price_per_kwh       DOUBLE,     -- electricity tariff, currency units per kWh
    grid_g_per_kwh      DOUBLE,     -- grid carbon intensity, gCO2e per kWh
    wan_gbs             DOUBLE,     -- site uplink for cross-site traffic, GB/s
    latitude            DOUBLE,
    longitude           DOUBLE
);

-- A scheduling domain: one Slurm cluster or one Kubernetes cluster.
-- table clusters: tracked; key (cluster); demo; lake
CREATE TABLE clusters (
    cluster             VARCHAR PRIMARY KEY,
    site                VARCHAR,
    scheduler           VARCHAR,    -- 'slurm' | 'kubernetes'
    fabric              VARCHAR,    -- 'infiniband' | 'roce' | 'ethernet'
    gpu_model           VARCHAR,    -- dominant model; hosts may differ (see nodes)
    hosts               INTEGER,
    gpus                INTEGER
);

-- The hardware inventory: one row per host.
-- table nodes: tracked; key (host); demo; lake
CREATE TABLE nodes (
    host                VARCHAR PRIMARY KEY,
    cluster             VARCHAR,
    site                VARCHAR,
    rack                VARCHAR,
    gpu_model           VARCHAR,    -- joins gpu_models.model
    gpus                INTEGER,
    cpu_cores           INTEGER,
    memory_gb           DOUBLE,
    nic_model           VARCHAR,    -- compute fabric NIC, joins nic_models.model
    nic_count           INTEGER,    -- compute NICs per host
    pcie_gen            INTEGER,    -- PCIe generation of the NIC slots
    pcie_lanes          INTEGER,    -- lanes per NIC slot
    storage_nic_gbps    DOUBLE,     -- line rate of one storage/front-end NIC
    storage_nic_count   INTEGER,
    bond_mode           VARCHAR,    -- 'none' | '802.3ad' | 'balance-rr' | ...
    state               VARCHAR,    -- 'up' | 'drain' | 'down'
    installed_at        TIMESTAMPTZ
);

-- Telemetry in long format: one row per (time, GPU, metric). `metric` is a DCGM field name
-- whatever the source; labels the columns do not hold (pod, namespace, MIG profile, ...) are kept.
-- table gpu_metrics: tracked; demo; lake
CREATE TABLE gpu_metrics (
    ts                  TIMESTAMPTZ NOT NULL,
    host                VARCHAR NOT NULL,
    gpu                 INTEGER,    -- index on the host (DCGM `gpu` label)
    uuid                VARCHAR,
    model               VARCHAR,    -- DCGM modelName / nvidia-smi name
    metric              VARCHAR NOT NULL,
    value               DOUBLE,
    labels              JSON                -- {"pod": "...", "GPU_I_PROFILE": "1g.10gb", ...}
);

-- One row per job (array tasks are jobs of their own); steps live in job_steps.
-- table jobs: tracked; key (job_id); demo; lake
CREATE TABLE jobs (
    job_id              VARCHAR NOT NULL,   -- '123', or '123_4' for an array task
    job_name            VARCHAR,
    user                VARCHAR,
    account             VARCHAR,            -- the team that pays
    partition           VARCHAR,
    qos                 VARCHAR,
    cluster             VARCHAR,
    submit_at           TIMESTAMPTZ,
    eligible_at         TIMESTAMPTZ,
    start_at            TIMESTAMPTZ,
    end_at              TIMESTAMPTZ,
    elapsed_s           DOUBLE,
    state               VARCHAR,            -- Slurm base state: COMPLETED, FAILED, CANCELLED, ...
    state_reason        VARCHAR,            -- the rest of the state text, e.g. 'by 1234'
    gpus                INTEGER,            -- from gres/gpu or gres/gpu:TYPE in AllocTRES
    gpu_type            VARCHAR,            -- TYPE of gres/gpu:TYPE when given
    nodes               INTEGER,
    node_list           VARCHAR[],          -- expanded from Slurm host-list syntax
    cpus                INTEGER,
    exit_code           VARCHAR,            -- 'code:signal'
    derived_exit_code   VARCHAR
);

-- Job steps: '123.batch', '123.extern', '123.0', ...
-- table job_steps: tracked; key (job_id, step_id); demo; lake
CREATE TABLE job_steps (
    job_id              VARCHAR NOT NULL,
    step_id             VARCHAR NOT NULL,   -- 'batch', 'extern', '0', '1', ...
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
    total_cpu_s         DOUBLE
);

-- Events in a job's life that the scheduler log does not carry: checkpoints, XID-caused failures.
-- table job_events: tracked; demo; lake
CREATE TABLE job_events (
    job_id              VARCHAR NOT NULL,
    ts                  TIMESTAMPTZ NOT NULL,
    event               VARCHAR NOT NULL,   -- 'checkpoint' | 'xid_failure' | 'restart' | ...
    host                VARCHAR,
    gpu                 INTEGER,
    value               DOUBLE,             -- checkpoint: seconds the save took; xid: the code
    detail              VARCHAR
);
