-- Fault history and risk (warehouse/faults/, docs/faults.md).
--
-- node_faults: one row per fault of a node, from `wanka ingest faults FILE` — a fault trace
-- (InfiniteHBD's JSON events), an operator's CSV or ndjson ticket/RMA export, or Slurm's own
-- record of drained and down nodes (`sinfo -R`, `scontrol show node`). A fault still open has
-- no end (end_at NULL). `node` is the name the source gives: a node the inventory does not know
-- (yet) is kept as it is and joins `nodes.host` once the inventory names it.
--   level        the source's severity: 'Hardware Failure', 'Software Failure', ... (traces);
--                'drain' | 'down' | 'fail' (Slurm); the CSV's `level` column when it has one
--   class        what failed: 'GPU', 'NIC', 'Power Supply', ... (traces, the CSV's `kind`);
--                'slurm' for a Slurm drain
--   description  the fault's text: InfiniteHBD's Desc, the ticket's text, Slurm's Reason=
--   source       'trace' | 'csv' | 'ndjson' | 'sinfo' | 'scontrol', with ':user' for Slurm
--                ('sinfo:root': who set the reason)
-- Overlapping faults of one node and class in one file are one fault (merged, and said in
-- wanka.ingest_rejects with both lines); faults of different classes may overlap.
-- table node_faults: tracked; key (node, start_at, class, source); lake
CREATE TABLE node_faults (
    node                VARCHAR NOT NULL,
    start_at            TIMESTAMPTZ NOT NULL,
    end_at              TIMESTAMPTZ,        -- NULL while open; >= start_at
    level               VARCHAR,
    class               VARCHAR,
    description         VARCHAR,
    source              VARCHAR NOT NULL,
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);

@include(parts/tracked_table.sql, table=node_faults);

-- The thresholds and weights of the risk score (sql/dynamic/node_risk.sql), one row per setting;
-- an admin edits `value` (UPDATE risk_settings SET value = 2 WHERE name = 'watch_score').
-- Tracked, so that an edit makes node_risk's next refresh recompute the nodes it touches.
--   prior_strength      α of the empirical-Bayes rate ratio (α + D) / (α + m): how many decayed
--                       faults of evidence it takes to move a node halfway from the fleet
--   history_half_life_d half-life of a fault's or drain's weight, days
--   precursor_half_life_d  half-life of a telemetry precursor's weight, days
--   w_<kind>            weight of one piece of evidence of that kind (node_signals.kind)
--   watch_score, drain_score  score at which node_risk says 'watch' / 'drain'
--   fleet_nodes         nodes in the fleet when the inventory does not say (0: count them)
-- table risk_settings: tracked; key (name)
CREATE TABLE risk_settings (
    name                VARCHAR NOT NULL,
    value               DOUBLE NOT NULL,
    description         VARCHAR NOT NULL,
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);

@include(parts/tracked_table.sql, table=risk_settings);

INSERT INTO risk_settings (name, value, description) VALUES
    ('prior_strength', 0.5, 'alpha of the empirical-Bayes rate ratio (alpha + D) / (alpha + m)'),
    ('history_half_life_d', 30, 'half-life of a past fault or drain, days'),
    ('precursor_half_life_d', 2, 'half-life of a telemetry precursor or a NODE_FAIL job, days'),
    ('w_fault', 1, 'weight of one fault of node_faults (trace, ticket, RMA)'),
    ('w_drain', 0.5, 'weight of one Slurm drain or down record'),
    ('w_node_fail', 1, 'weight of one job that ended NODE_FAIL on the node'),
    ('w_sbe', 0.02, 'weight of one increase of corrected (single-bit) ECC errors'),
    ('w_row_remap', 0.5, 'weight of one increase of remapped rows (correctable or pending)'),
    ('w_xid_precursor', 1, 'weight of one XID 48/63/64/94/95 (memory and page retirement)'),
    ('w_gpu_failure', 1, 'weight of one failing XID (79 fell off the bus, 119 GSP, 74 NVLink) or DBE'),
    ('w_nvlink', 0.2, 'weight of one increase of NVLink CRC/replay/recovery errors'),
    ('w_thermal', 0.05, 'weight of one thermal slowdown'),
    ('watch_score', 3, 'score (times the fleet rate plus precursor weight) that puts a node on watch'),
    ('drain_score', 8, 'score that advises draining the node before its next job'),
    ('fleet_nodes', 0, 'nodes in the fleet when the inventory does not say; 0 counts them');

-- node_signals: the evidence node_risk reads, one row per piece: a fault or drain of
-- node_faults, a precursor event of gpu_events, a job that ended NODE_FAIL. Derived in the
-- transaction of the ingest that brought it (warehouse/faults/signals.py), so that node_risk
-- refreshes from one tracked table.
--   kind   fault | drain | node_fail | gpu_failure | sbe | row_remap | xid_precursor | nvlink |
--          thermal (the w_<kind> rows of risk_settings)
-- table node_signals: tracked
CREATE TABLE node_signals (
    node                VARCHAR NOT NULL,
    gpu                 INTEGER,            -- the GPU, where the evidence names one
    signal_at           TIMESTAMPTZ NOT NULL,
    kind                VARCHAR NOT NULL,
    detail              VARCHAR,
    batch_id            BIGINT DEFAULT nextval('wanka.batch_seq')
);

@include(parts/tracked_table.sql, table=node_signals);

-- The fleet's measured failure rate, what job_interruption_risk(gpus, hours) reads: faults of
-- node_faults per 1,000 node-days over the time they span (first start to last event), the
-- fleet's nodes taken from risk_settings' fleet_nodes, else the inventory, else the nodes the
-- faults name. Without a day of fault history it is Llama 3's published rate, 3.79 per 1,000
-- node-days (419 interruptions in 54 days on 2,048 hosts of 8 GPUs), and says so.
-- table fleet_fault_rate: view
CREATE VIEW fleet_fault_rate AS
WITH observed AS (
    SELECT count(*) AS faults,
           count(DISTINCT node) AS nodes_seen,
           epoch(max(coalesce(end_at, start_at)) - min(start_at)) / 86400 AS days
    FROM node_faults
), sized AS (
    SELECT faults, days,
           coalesce(nullif((SELECT max(value) FROM risk_settings WHERE name = 'fleet_nodes'), 0),
                    nullif((SELECT count(*) FROM nodes), 0),
                    nodes_seen) AS nodes
    FROM observed
)
SELECT faults, nodes, days,
       CASE WHEN faults > 0 AND days >= 1 THEN 1000.0 * faults / (nodes * days) ELSE 3.79 END
           AS faults_per_1k_node_days,
       CASE WHEN faults > 0 AND days >= 1 THEN 'node_faults'
            ELSE 'default: Llama 3, 3.79 per 1,000 node-days' END AS source
FROM sized;

-- job_interruption_risk(gpus, hours[, faults_per_1k_node_days]): the probability that a job on
-- `gpus` GPUs running `hours` is interrupted at least once, 1 - exp(-r/1000 × gpus/8 × hours/24)
-- for r faults per 1,000 node-days of 8-GPU nodes — the model function interruption_probability
-- (udfs/reliability.py, where the formula and its source are; a test holds the two equal) — at
-- the fleet's measured rate unless a rate is given. NULL in, NULL out; a negative or fractional
-- count is an error naming the argument, as for every model function.
-- 1 - exp(-x), by its series where x is small (1 - exp(-x) would lose its digits there).
CREATE MACRO job_interruption_risk_x(x) AS
    CASE WHEN x < 1e-3 THEN x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4))) ELSE 1 - exp(-x) END;
CREATE MACRO job_interruption_risk(gpus, hours) AS
    CASE
        WHEN gpus IS NULL OR hours IS NULL THEN NULL
        WHEN gpus < 1 OR gpus <> trunc(gpus) THEN
            error('job_interruption_risk: gpus must be an integer >= 1 GPUs, got ' || gpus)
        WHEN hours < 0 THEN error('job_interruption_risk: hours must be >= 0 h, got ' || hours)
        ELSE job_interruption_risk_x((SELECT faults_per_1k_node_days FROM fleet_fault_rate)
                                     / 1000 * gpus / 8 * hours / 24)
    END,
    (gpus, hours, faults_per_1k_node_days) AS
    CASE
        WHEN gpus IS NULL OR hours IS NULL OR faults_per_1k_node_days IS NULL THEN NULL
        WHEN gpus < 1 OR gpus <> trunc(gpus) THEN
            error('job_interruption_risk: gpus must be an integer >= 1 GPUs, got ' || gpus)
        WHEN hours < 0 THEN error('job_interruption_risk: hours must be >= 0 h, got ' || hours)
        WHEN faults_per_1k_node_days < 0 THEN
            error('job_interruption_risk: faults_per_1k_node_days must be >= 0, got '
                  || faults_per_1k_node_days)
        ELSE job_interruption_risk_x(faults_per_1k_node_days / 1000 * gpus / 8 * hours / 24)
    END;
