"""Which job held which GPU when: job_gpus from labels, scontrol and whole nodes.

sql/schema/0014_job_gpus.sql says what each source means and why there are two stores. Here:

- `note_labels`: after samples are stored (warehouse.telemetry), the stretches of scrapes whose
  series carry a job label (`hpc_job`, or `pod`/`namespace`) grow or start, and a GPU seen with
  labels for the first time gets its one 'labels' row in gpu_attribution;
- `after_ingest`: after an ingest's rows are stored, in its transaction — a new `scontrol`
  capture of a job replaces that job's earlier scontrol rows, and the whole-node rows follow
  the jobs and nodes as they now are (`sync_whole_nodes`).
"""

from __future__ import annotations

import duckdb

#: A job's stretch on a GPU ends where the GPU went this long without a sample carrying it.
STRETCH_GAP = "INTERVAL 5 MINUTE"

#: The job a sample's labels name (NULL: none), in SQL over a `labels` JSON column of alias `t`.
LABEL_SOURCES = ("dcgm_hpc_job", "kubernetes_pod")


def label_job(alias: str) -> str:
    """The job id a row's labels name, or NULL: `hpc_job`, else 'namespace/pod'."""
    labels = f"{alias}.labels"
    return (
        f"coalesce({labels}->>'hpc_job', CASE WHEN {labels}->>'pod' IS NOT NULL THEN "
        f"coalesce({labels}->>'namespace', '') || '/' || ({labels}->>'pod') END)"
    )


def _label_source(alias: str) -> str:
    return (
        f"CASE WHEN {alias}.labels->>'hpc_job' IS NOT NULL THEN 'dcgm_hpc_job' "
        "ELSE 'kubernetes_pod' END"
    )


def note_labels(cur: duckdb.DuckDBPyConnection, batches: str) -> None:
    """Record the job labels of the samples of `batches` (a SQL list or subquery of batch ids)."""
    seen = (
        f"SELECT {label_job('r')} AS job_id, r.host, r.gpu, r.uuid, "
        f"r.labels->>'GPU_I_ID' AS gpu_instance, {_label_source('r')} AS source, "
        "min(s.lo) AS lo, max(s.hi) AS hi "
        "FROM (SELECT series_id, min(ts) AS lo, max(ts) AS hi FROM wanka.gpu_samples "
        f"WHERE batch_id IN ({batches}) GROUP BY series_id) s "
        "JOIN wanka.gpu_series r ON r.series_id = s.series_id "
        "WHERE r.labels IS NOT NULL AND r.gpu IS NOT NULL "
        "AND (r.labels->>'hpc_job' IS NOT NULL OR r.labels->>'pod' IS NOT NULL) GROUP BY ALL"
    )
    found = cur.sql(seen).to_arrow_table()
    if not found.num_rows:
        return
    cur.register("_wanka_seen", found)
    try:
        same = (
            "t.job_id = n.job_id AND t.host = n.host AND t.gpu = n.gpu AND t.source = n.source "
            "AND t.gpu_instance IS NOT DISTINCT FROM n.gpu_instance"
        )
        near = f"n.lo <= t.last_ts + {STRETCH_GAP} AND n.hi >= t.start_at - {STRETCH_GAP}"
        cur.execute(
            "UPDATE wanka.job_label_stretches t SET start_at = least(t.start_at, n.lo), "
            f"last_ts = greatest(t.last_ts, n.hi), uuid = coalesce(n.uuid, t.uuid) "
            f"FROM _wanka_seen n WHERE {same} AND {near}"
        )
        cur.execute(
            "INSERT INTO wanka.job_label_stretches "
            "SELECT n.job_id, n.host, n.gpu, n.uuid, n.gpu_instance, n.source, n.lo, n.hi "
            "FROM _wanka_seen n WHERE NOT EXISTS (SELECT 1 FROM wanka.job_label_stretches t "
            f"WHERE {same} AND {near})"
        )
        cur.execute(
            "INSERT INTO gpu_attribution (host, gpu, source) "
            "SELECT DISTINCT n.host, n.gpu, 'labels' FROM _wanka_seen n WHERE NOT EXISTS "
            "(SELECT 1 FROM gpu_attribution a WHERE a.source = 'labels' AND a.host = n.host "
            "AND a.gpu = n.gpu)"
        )
    finally:
        cur.unregister("_wanka_seen")


def after_ingest(cur: duckdb.DuckDBPyConnection, batch_id: int, tables: set[str]) -> None:
    """Bring the attribution up to an ingest that wrote `tables` in batch `batch_id`."""
    if "gpu_attribution" in tables:
        cur.execute(
            "DELETE FROM gpu_attribution WHERE source = 'scontrol' AND batch_id < ? AND job_id IN "
            "(SELECT job_id FROM gpu_attribution WHERE batch_id = ? AND source = 'scontrol')",
            [batch_id, batch_id],
        )
    if tables & {"jobs", "nodes", "gpu_attribution", "gpu_metrics"}:
        sync_if_needed(cur)


#: The newest batch id or change sequence of the tables whole-node rows are derived from.
_SOURCES_HIGH = """
SELECT greatest(
    (SELECT coalesce(max(batch_id), 0) FROM jobs),
    (SELECT coalesce(max(batch_id), 0) FROM nodes),
    (SELECT coalesce(max(batch_id), 0) FROM gpu_attribution WHERE source <> 'whole_node'
                                                              AND source <> 'ambiguous'),
    (SELECT coalesce(max(seq), 0) FROM wanka.table_changes WHERE table_name IN ('jobs', 'nodes')))
"""


def sync_if_needed(cur: duckdb.DuckDBPyConnection) -> bool:
    """`sync_whole_nodes` when jobs, nodes or the other sources changed since it last ran (a
    few zone-map reads otherwise); whether it ran. Every refresh of a table that reads
    gpu_attribution calls it first, so rows written by SQL are followed as ingested ones are."""
    high = int(cur.execute(_SOURCES_HIGH).fetchall()[0][0])
    done = int(cur.execute("SELECT synced_to FROM wanka.attribution_state").fetchall()[0][0])
    if high <= done:
        return False
    sync_whole_nodes(cur)
    cur.execute("UPDATE wanka.attribution_state SET synced_to = ?", [high])
    return True


#: Per job and host, the rows whole-node information gives: every GPU of a host the job holds
#: whole, or one ambiguous row for a host it shares. A job is left to other sources when it has
#: scontrol rows or runs on a host whose exporter names jobs (a 'labels' row).
_WHOLE_NODE = """
WITH placed AS (
    SELECT j.job_id, h.host, j.start_at,
           CASE WHEN j.state NOT IN ('RUNNING', 'PENDING', 'SUSPENDED', 'REQUEUED') THEN j.end_at
           END AS end_at,
           coalesce(j.exclusive, false) OR j.gpus = sum(n.gpus) OVER (PARTITION BY j.job_id)
               AS whole,
           n.gpus AS host_gpus
    FROM jobs j, unnest(j.node_list) AS h(host)
    JOIN nodes n ON n.host = h.host
    WHERE j.start_at IS NOT NULL AND coalesce(j.gpus, 0) > 0 AND coalesce(n.gpus, 0) > 0
      AND NOT EXISTS (SELECT 1 FROM gpu_attribution a
                      WHERE a.source = 'scontrol' AND a.job_id = j.job_id)
      AND NOT EXISTS (SELECT 1 FROM gpu_attribution a
                      WHERE a.source = 'labels' AND a.host = h.host)
)
SELECT job_id, host, g.gpu, start_at, end_at, 'whole_node' AS source, true AS exact
FROM placed, range(host_gpus) AS g(gpu) WHERE whole
UNION ALL
SELECT job_id, host, NULL, start_at, end_at, 'ambiguous', false FROM placed WHERE NOT whole
"""

_KEY = ("job_id", "host", "gpu", "start_at", "end_at", "source")


def sync_whole_nodes(cur: duckdb.DuckDBPyConnection) -> None:
    """Make the 'whole_node' and 'ambiguous' rows those the jobs and nodes now give, changing
    only the rows that differ (a running job's rows stay until it ends)."""
    match = " AND ".join(f"a.{c} IS NOT DISTINCT FROM w.{c}" for c in _KEY)
    cur.register("_wanka_whole", cur.sql(_WHOLE_NODE).to_arrow_table())
    try:
        cur.execute(
            "DELETE FROM gpu_attribution a WHERE a.source IN ('whole_node', 'ambiguous') "
            f"AND NOT EXISTS (SELECT 1 FROM _wanka_whole w WHERE {match})"
        )
        cur.execute(
            "INSERT INTO gpu_attribution (job_id, host, gpu, start_at, end_at, source, exact) "
            "SELECT w.job_id, w.host, w.gpu, w.start_at, w.end_at, w.source, w.exact "
            "FROM _wanka_whole w WHERE NOT EXISTS (SELECT 1 FROM gpu_attribution a "
            f"WHERE a.source IN ('whole_node', 'ambiguous') AND {match})"
        )
    finally:
        cur.unregister("_wanka_whole")
