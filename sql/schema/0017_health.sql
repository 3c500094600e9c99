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


-- The rules of `wanka health` (warehouse/health.py, sql/health/gpu_health.sql), one row per
-- rule: a GPU is put in `state` when at least `threshold` of the rule's evidence falls in the
-- last `window_s` seconds before the newest telemetry. An admin edits the thresholds
-- (UPDATE wanka.health_rules SET threshold = 3 WHERE rule = 'repeated_hw_xid').
CREATE TABLE wanka.health_rules (
    rule                VARCHAR PRIMARY KEY,
    state               VARCHAR NOT NULL,   -- watch | drain | replace
    threshold           DOUBLE NOT NULL,
    window_s            DOUBLE NOT NULL,
    description         VARCHAR NOT NULL
);
INSERT INTO wanka.health_rules VALUES
    ('remap_failure', 'replace', 1, 30 * 86400,
     'row remapping failed: the GPU has no spare rows left for a failing bank (NVIDIA: RMA)'),
    ('repeated_hw_xid', 'replace', 2, 7 * 86400,
     'hardware XIDs (memory, NVLink, fell off the bus) needing a reset or a reboot, again and again'),
    ('uncorrectable_rows', 'replace', 4, 30 * 86400,
     'rows remapped for uncorrectable errors, increases'),
    ('xid_drain', 'drain', 1, 86400,
     'an XID whose first action is to reboot the host (xid_codes.action = drain_node), e.g. 79'),
    ('xid_reset', 'drain', 1, 86400,
     'an XID whose first action is a GPU reset (xid_codes.action = reset_gpu), e.g. 48, 95, 119'),
    ('ecc_dbe', 'drain', 1, 86400,
     'double-bit (uncorrectable) ECC error count went up'),
    ('sbe_rate', 'watch', 10, 86400,
     'single-bit (corrected) ECC error count went up this many times'),
    ('thermal_throttle', 'watch', 3, 86400,
     'clocks slowed for temperature (HW slowdown, SW or HW thermal) this many times'),
    ('power_throttle', 'watch', 10, 86400,
     'clocks slowed for power (SW power cap, HW power brake) this many times'),
    ('nvlink_errors', 'watch', 5, 86400,
     'NVLink CRC, replay or recovery error counts went up this many times'),
    ('silent', 'watch', 300, 300,
     'no sample for threshold seconds while another GPU of the same host still reports');

-- The newest sample of each GPU and event field (warehouse/gpu_events.py): the sample an
-- ingest's first one is compared with, so finding events reads the ingest's own samples only.
-- gpu -1 and uuid '' stand for none.
CREATE TABLE wanka.gpu_event_state (
    host                VARCHAR NOT NULL,
    gpu                 INTEGER NOT NULL,
    uuid                VARCHAR NOT NULL,
    metric              VARCHAR NOT NULL,
    ts                  TIMESTAMPTZ NOT NULL,
    value               DOUBLE,
    PRIMARY KEY (host, gpu, uuid, metric)
);

-- The DCGM fields gpu_events are found in, and the kind of event each shows
-- (sql/health/gpu_events.sql says what an event of each kind is).
CREATE TABLE wanka.gpu_event_fields (
    metric              VARCHAR PRIMARY KEY,
    kind                VARCHAR NOT NULL    -- xid | ecc_sbe | ecc_dbe | row_remap | ... | throttle
);
INSERT INTO wanka.gpu_event_fields VALUES
    ('DCGM_FI_DEV_XID_ERRORS', 'xid'),
    ('DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'ecc_sbe'),
    ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'ecc_dbe'),
    ('DCGM_FI_DEV_ECC_SBE_AGG_TOTAL', 'ecc_sbe'),
    ('DCGM_FI_DEV_ECC_DBE_AGG_TOTAL', 'ecc_dbe'),
    ('DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS', 'row_remap'),
    ('DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS', 'row_remap_uncorrectable'),
    ('DCGM_FI_DEV_ROW_REMAP_FAILURE', 'row_remap_failure'),
    ('DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'throttle'),
    ('DCGM_FI_DEV_CLOCKS_EVENT_REASONS', 'throttle'),
    ('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL', 'nvlink_error'),
    ('DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL', 'nvlink_error'),
    ('DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL', 'nvlink_error'),
    ('DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL', 'nvlink_error');
