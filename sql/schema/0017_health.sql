-- XID codes: what each NVIDIA driver error code means, what kind of fault it is and what to do
-- first. Loaded from sql/reference/xid_codes.csv: the description NVIDIA's XID documentation
-- gives (as dcgm-exporter's xid_errors.go lists it), the mnemonic and the two resolution buckets
-- of NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), the
-- possible causes the older XID error listing marks, and wanka's category and action:
--   category  application | driver_firmware | memory | nvlink | fell_off_bus | power_thermal |
--             video_engine | virtualisation | informational | unused | none (XID 0)
--   action    none (the application restarts, or nothing to do) | reset_gpu | drain_node
--             (reboot the host, update or check it) | rma: the catalog's immediate action
--             mapped; repeated hardware XIDs escalate in the health rules.

-- table xid_codes: reference; lake
CREATE TABLE xid_codes (
    xid                          INTEGER PRIMARY KEY,
    description                  VARCHAR NOT NULL,
    category                     VARCHAR NOT NULL,
    action                       VARCHAR NOT NULL,
    mnemonic                     VARCHAR,  -- the driver's name, e.g. ROBUST_CHANNEL_GPU_ECC_DBE
    nvidia_immediate_action      VARCHAR,  -- the catalog's bucket: RESTART_APP, RESET_GPU, ...
    nvidia_investigatory_action  VARCHAR,
    possible_causes              VARCHAR,  -- 'HW error|Driver error|...'
    source                       VARCHAR NOT NULL
);

-- GPU events (warehouse/gpu_events.py, sql/health/gpu_events.sql): what the telemetry shows
-- happening to a GPU, kept at ingest in the ingest's transaction, with its batch:
--   kind  xid | ecc_sbe | ecc_dbe | row_remap | row_remap_uncorrectable | row_remap_failure |
--         thermal_throttle | power_throttle | nvlink_error
--
-- table gpu_events: demo; lake
CREATE TABLE gpu_events (
    ts                  TIMESTAMPTZ NOT NULL,
    host                VARCHAR,
    gpu                 INTEGER,
    uuid                VARCHAR,
    kind                VARCHAR NOT NULL,
    code                INTEGER,            -- the XID code (xid events)
    detail              VARCHAR,            -- the XID's description, the counter's increase, ...
    metric              VARCHAR NOT NULL,   -- the DCGM field it was seen in
    value               DOUBLE,             -- the field's value then
    batch_id            BIGINT NOT NULL     -- the telemetry batch that showed it
);

