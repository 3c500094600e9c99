-- The `wanka` system schema: what the warehouse knows about itself.
-- (wanka.schema_migrations is created by the engine before any migration runs.)

CREATE SEQUENCE wanka.batch_seq START 1;

CREATE TABLE wanka.reference_loads (
    table_name          VARCHAR PRIMARY KEY,
    source_file         VARCHAR NOT NULL,
    content_sha256      VARCHAR NOT NULL,
    rows                BIGINT NOT NULL,
    loaded_at           TIMESTAMPTZ NOT NULL
);

-- One row per ingest: one batch, one transaction.
CREATE TABLE wanka.ingest_batches (
    batch_id            BIGINT PRIMARY KEY,   -- from wanka.batch_seq: monotonically increasing
    source_format       VARCHAR NOT NULL,     -- 'dcgm', 'nvidia-smi', 'sacct', ...
    source_name         VARCHAR NOT NULL,     -- file path, '-' for stdin, or an upload name
    content_sha256      VARCHAR NOT NULL,
    target_table        VARCHAR,
    rows                BIGINT NOT NULL,
    rejected            BIGINT NOT NULL,
    started_at          TIMESTAMPTZ NOT NULL,
    finished_at         TIMESTAMPTZ,
    bytes               BIGINT
);

-- Lines an ingest could not read, kept whole with the reason.
CREATE TABLE wanka.ingest_rejects (
    batch_id            BIGINT NOT NULL,
    source_name         VARCHAR,
    line                BIGINT,
    field               VARCHAR,
    raw                 VARCHAR,
    reason              VARCHAR NOT NULL
);

-- Dynamic tables: declared in SQL, refreshed by the scheduler.
CREATE TABLE wanka.dynamic_tables (
    name                VARCHAR PRIMARY KEY,
    definition          VARCHAR NOT NULL,     -- the defining SELECT
    freshness           VARCHAR NOT NULL,     -- '5 minutes' | 'downstream'
    refresh_mode        VARCHAR NOT NULL,     -- as declared: 'auto' | 'incremental' | 'full'
    resolved_mode       VARCHAR,              -- what the planner chose
    refresh_mode_reason VARCHAR,
    created_at          TIMESTAMPTZ,
    last_refresh_at     TIMESTAMPTZ,
    data_timestamp      TIMESTAMPTZ,          -- the data the table reflects
    lag_s               DOUBLE,
    state               VARCHAR               -- 'active' | 'failed' | 'upstream_failed' | ...
);

CREATE TABLE wanka.refresh_history (
    name                VARCHAR NOT NULL,
    started_at          TIMESTAMPTZ NOT NULL,
    finished_at         TIMESTAMPTZ,
    refresh_mode        VARCHAR,              -- 'incremental' | 'full' | 'no_data'
    refresh_mode_reason VARCHAR,
    rows_inserted       BIGINT,
    rows_deleted        BIGINT,
    data_timestamp      TIMESTAMPTZ,
    state               VARCHAR,              -- 'succeeded' | 'failed'
    error               VARCHAR
);

-- Facts about this database file: when the demo was built, etc.
CREATE TABLE wanka.settings (
    key                 VARCHAR PRIMARY KEY,
    value               VARCHAR,
    updated_at          TIMESTAMPTZ
);
