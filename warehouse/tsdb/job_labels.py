"""The job labels of telemetry, derived as it is stored (`warehouse.tsdb.append`).

- `note_gpus`: a GPU whose telemetry arrives for the first time gets its one 'labels' row in
  gpu_attribution (what its samples that name their job join): gpu_attribution changes with
  new GPUs, not with every job a label names;
- `note_labels`: after samples are stored, the stretches of scrapes whose series carry a job
  label (`hpc_job`, or `pod`/`namespace`) grow or start.

sql/schema/0014_job_gpus.sql says what each source of job_gpus means; the other sources
(scontrol, whole nodes) are `warehouse.jobs.attribution`'s.
"""

from __future__ import annotations

import duckdb

from warehouse.tsdb.relations import HOT, SERIES

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


def note_gpus(cur: duckdb.DuckDBPyConnection, known_series: int) -> None:
    """Give the GPUs of the series past id `known_series` (new ones) their 'labels' row."""
    cur.execute(
        "INSERT INTO gpu_attribution (host, gpu, source) "
        f"SELECT DISTINCT r.host, r.gpu, 'labels' FROM {SERIES} r "
        "WHERE r.series_id > ? AND r.gpu IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
        "gpu_attribution a WHERE a.source = 'labels' AND a.host = r.host AND a.gpu = r.gpu)",
        [known_series],
    )


def note_labels(cur: duckdb.DuckDBPyConnection, batches: str) -> None:
    """Record the job labels of the samples of `batches` (a SQL list or subquery of batch ids)."""
    # The batches were just appended: their samples are hot.
    # The batch's series first, materialised: else the label tests go down into the scan of
    # wanka.gpu_series and parse the labels of every series there, not just the batch's.
    seen = (
        "WITH r AS MATERIALIZED (SELECT r.host, r.gpu, r.uuid, r.labels, s.lo, s.hi "
        f"FROM (SELECT series_id, min(ts) AS lo, max(ts) AS hi FROM {HOT} "
        f"WHERE batch_id IN ({batches}) GROUP BY series_id) s "
        f"JOIN {SERIES} r ON r.series_id = s.series_id "
        "WHERE r.labels IS NOT NULL AND r.gpu IS NOT NULL) "
        f"SELECT {label_job('r')} AS job_id, r.host, r.gpu, r.uuid, "
        f"r.labels->>'GPU_I_ID' AS gpu_instance, {_label_source('r')} AS source, "
        "min(r.lo) AS lo, max(r.hi) AS hi FROM r "
        "WHERE r.labels->>'hpc_job' IS NOT NULL OR r.labels->>'pod' IS NOT NULL GROUP BY ALL"
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
    finally:
        cur.unregister("_wanka_seen")
