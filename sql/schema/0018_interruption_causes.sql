-- Interruptions by root cause (sql/analyses/interruption_causes.sql): the causes a job is
-- interrupted for, as Llama 3's Table 5 names them (Dubey et al., "The Llama 3 Herd of Models",
-- 2024, section 3.3.4: 419 unexpected interruptions in a 54-day snapshot on 16,384 H100), and the
-- cause of each XID. Both are loaded from sql/reference/<table>.csv.
--
-- An interruption is recorded in job_events, one row each:
--   event 'interruption'  detail = the cause as the operator's triage wrote it ('Software Bug',
--                         'Network Switch/Cable', 'Host Maintenance', ...), matched to
--                         interruption_causes.cause without regard to case
--   event 'xid_failure'   value = the fatal XID (the cause comes from interruption_xids)
-- or only in gpu_events: an XID whose interruption_xids.interrupts is true, with no job record.
--
-- Table 5 heads its two name columns 'Component' (Faulty GPU, SSD, ...) and 'Category' (GPU,
-- Host, ...); here they are `cause` and `component`.

-- table interruption_causes: reference; lake
CREATE TABLE interruption_causes (
    cause                VARCHAR PRIMARY KEY,  -- 'Faulty GPU', 'GPU HBM3 Memory', 'Software Bug', ...
    component            VARCHAR NOT NULL,     -- GPU | Network | Host | Dependency | Unplanned Maintenance | Unknown
    llama3_interruptions INTEGER,              -- Table 5's count (of 419); NULL: not a row of Table 5
    llama3_printed_pct   DOUBLE,               -- Table 5's printed share, % (Faulty GPU: 30.1, yet 148/419 = 35.3)
    description          VARCHAR NOT NULL,     -- what is filed under it, and the XIDs that are
    source               VARCHAR NOT NULL
);

-- table interruption_xids: reference; lake
CREATE TABLE interruption_xids (
    xid                  INTEGER PRIMARY KEY,  -- joins xid_codes.xid
    cause                VARCHAR NOT NULL,     -- joins interruption_causes.cause
    interrupts           BOOLEAN NOT NULL,     -- seen in gpu_events with no job record, it is an interruption
    basis                VARCHAR NOT NULL      -- why this cause (and whether it interrupts)
);
