"""Which job held which GPU when: job_gpus from scontrol and whole nodes.

sql/schema/0014_job_gpus.sql says what each source means and why there are two stores. The
label source (a GPU's first 'labels' row, and the stretches of scrapes whose series carry a job
label) is derived from telemetry as it is stored: `warehouse.tsdb.job_labels`. Here:

- `after_ingest`: after an ingest's rows are stored, in its transaction — a new `scontrol`
  capture of a job replaces that job's earlier scontrol rows, and the whole-node rows follow
  the jobs and nodes as they now are (`sync_whole_nodes`);
- `sync_if_needed`: what every refresh of a table reading gpu_attribution calls first
  (`out_of_sync` says, without writing, whether it would sync).
"""

from __future__ import annotations

import duckdb


def after_ingest(cur: duckdb.DuckDBPyConnection, batch_id: int, tables: set[str]) -> None:
    """Bring the attribution up to an ingest that wrote `tables` in batch `batch_id`."""
    if "gpu_attribution" in tables:
        cur.execute(
            "DELETE FROM gpu_attribution WHERE source = 'scontrol' AND batch_id < ? AND job_id IN "
            "(SELECT job_id FROM gpu_attribution WHERE batch_id = ? AND source = 'scontrol')",
            [batch_id, batch_id],
        )
    if tables & {"jobs", "nodes", "pods", "clusters", "gpu_attribution", "gpu_metrics"}:
        sync_if_needed(cur)


#: What the whole-node rows are derived from, in a few zone-map and count reads: the newest
#: batch id and the row count of jobs, nodes and the other sources (rows written without a
#: batch id change the count), and the newest logged update or delete of jobs and nodes.
_SOURCES_STATE = """
SELECT concat_ws('/',
    (SELECT coalesce(max(batch_id), 0) || ':' || count(*) FROM jobs),
    (SELECT coalesce(max(batch_id), 0) || ':' || count(*) FROM nodes),
    (SELECT coalesce(max(batch_id), 0) || ':' || count(*) FROM pods),
    (SELECT coalesce(max(batch_id), 0) || ':' || count(*) FROM clusters),
    (SELECT coalesce(max(batch_id), 0) || ':' || count(*) FROM gpu_attribution
     WHERE source NOT IN ('whole_node', 'ambiguous')),
    (SELECT count(DISTINCT host) FROM wanka.job_label_stretches),
    (SELECT coalesce(max(seq), 0) FROM wanka.table_changes
     WHERE table_name IN ('jobs', 'nodes', 'pods', 'clusters')))
"""


def sync_if_needed(cur: duckdb.DuckDBPyConnection) -> bool:
    """`sync_whole_nodes` when jobs, nodes or the other sources changed since it last ran (a
    few cheap reads otherwise); whether it ran. Every refresh of a table that reads
    gpu_attribution calls it first, so rows written by SQL are followed as ingested ones are."""
    state = _unsynced(cur)
    if state is None:
        return False
    sync_whole_nodes(cur)
    cur.execute("UPDATE wanka.attribution_state SET synced_to = ?", [state])
    return True


def out_of_sync(cur: duckdb.DuckDBPyConnection) -> bool:
    """Whether jobs, nodes or the other sources changed since `sync_whole_nodes` last ran, so
    the next refresh of a table reading gpu_attribution would change its whole-node rows."""
    return _unsynced(cur) is not None


def _unsynced(cur: duckdb.DuckDBPyConnection) -> str | None:
    """The sources' state when it differs from the one last synced to, else None."""
    state = str(cur.execute(_SOURCES_STATE).fetchall()[0][0])
    done = cur.execute("SELECT synced_to FROM wanka.attribution_state").fetchall()[0][0]
    return None if state == done else state


#: Per job and host, the rows whole-node information gives: every GPU of a host the job holds
#: whole, or one ambiguous row for a host it shares. A job is left to other sources when it has
#: scontrol rows or runs on a host whose exporter names jobs (a label stretch). Jobs of a
#: Kubernetes cluster in `jobs` (namespace as account) and pods in `pods` are named
#: 'namespace/pod', as the pod labels name them.
_WHOLE_NODE = """
WITH held AS (
    SELECT CASE WHEN c.scheduler = 'kubernetes' THEN coalesce(j.account, '') || '/' || j.job_id
                ELSE j.job_id END AS job_id,
           j.job_id AS slurm_id, h.host, j.start_at,
           CASE WHEN j.state NOT IN ('RUNNING', 'PENDING', 'SUSPENDED', 'REQUEUED') THEN j.end_at
           END AS end_at,
           coalesce(j.exclusive, false) AS exclusive, j.gpus
    FROM jobs j LEFT JOIN clusters c ON c.cluster = j.cluster, unnest(j.node_list) AS h(host)
    WHERE j.start_at IS NOT NULL AND coalesce(j.gpus, 0) > 0
    UNION ALL
    SELECT coalesce(p.namespace, '') || '/' || p.name, NULL, p.node, p.scheduled_at,
           CASE WHEN p.pod_phase NOT IN ('Running', 'Pending') THEN p.deleted_at END,
           false, CASE WHEN coalesce(p.gpu_milli, 1000) >= 1000 THEN p.num_gpu ELSE 0 END
    FROM pods p
    WHERE p.node IS NOT NULL AND p.scheduled_at IS NOT NULL AND coalesce(p.num_gpu, 0) > 0
),
placed AS (
    SELECT d.job_id, d.host, d.start_at, d.end_at,
           d.exclusive OR d.gpus = sum(n.gpus) OVER (PARTITION BY d.job_id) AS whole,
           n.gpus AS host_gpus
    FROM held d JOIN nodes n ON n.host = d.host
    WHERE coalesce(n.gpus, 0) > 0
      AND NOT EXISTS (SELECT 1 FROM gpu_attribution a
                      WHERE a.source = 'scontrol' AND a.job_id = d.slurm_id)
      AND NOT EXISTS (SELECT 1 FROM wanka.job_label_stretches s WHERE s.host = d.host)
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
