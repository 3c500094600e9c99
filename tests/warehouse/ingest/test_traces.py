"""Published traces: Philly jobs → jobs; Alibaba GenAI duty cycle and model loads → tables."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from warehouse.errors import UserError
from warehouse.ingest import ReadOptions, ingest
from warehouse.kernel.engine import Engine

PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster\n"


def rows(eng: Engine, sql: str) -> list[tuple[Any, ...]]:
    cur = eng.cursor()
    try:
        return cur.sql(sql).fetchall()
    finally:
        cur.close()


def test_philly_jobs_get_ids_from_lines_and_the_virtual_cluster_as_team(
    eng: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "philly.csv"
    path.write_text(
        PHILLY + "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n\n2017-10-09 06:13:03,10,8,80,6214e9\n"
    )
    [result] = ingest(eng, "philly", [str(path)], ReadOptions(cluster="philly"))
    assert (result.rows, result.rejected) == ({"jobs": 2}, 0)
    assert rows(eng, "SELECT job_id, cluster, account, partition, submit_at, start_at, elapsed_s, "
                     "gpus, state FROM jobs ORDER BY job_id") == [
        ("philly-2", "philly", "11cb48", "11cb48", datetime(2017, 10, 9, 7, 1, 55, tzinfo=UTC),
         None, 66.0, 1, None),
        ("philly-4", "philly", "6214e9", "6214e9", datetime(2017, 10, 9, 6, 13, 3, tzinfo=UTC),
         None, 10.0, 8, None),
    ]  # fmt: skip


def test_philly_lines_that_do_not_read_are_rejected_with_line_and_field(
    eng: Engine, tmp_path: Path
) -> None:
    path = tmp_path / "philly.csv"
    path.write_text(
        PHILLY
        + "2017-10-09 07:01:55,66.0,1,66.0,a\n"
        + "yesterday,1,1,1,b\n"
        + "2017-10-09 07:01:55,66.0,2,66.0,c\n"
        + "2017-10-09 07:01:55,-1,1,-1,d\n"
        + "2017-10-09 07:01:55,1,1.5,1.5,e\n"
        + "1,2\n"
    )
    [result] = ingest(eng, "philly", [str(path)])
    assert (result.rows, result.rejected) == ({"jobs": 1}, 5)
    assert rows(eng, "SELECT line, field, reason FROM wanka.ingest_rejects ORDER BY line") == [
        (3, "timestamp", "timestamp: not a time like 2017-10-09 07:01:55: 'yesterday'"),
        (4, "gpu_time", "gpu_time: not num_gpus × duration: '66.0'"),
        (5, "duration", "duration: not a number of seconds ≥ 0: '-1'"),
        (6, "num_gpus", "num_gpus: not a whole number ≥ 0: '1.5'"),
        (7, None, "expected 5 comma-separated fields as the header names"),
    ]


def test_a_file_that_is_not_the_trace_is_refused_naming_it(eng: Engine, tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(UserError, match=r"other.csv: expected the Philly job trace with a header"):
        ingest(eng, "philly", [str(path)])
    assert rows(eng, "SELECT count(*) FROM jobs") == [(0,)]


def test_the_real_traces_load_whole_in_one_batch_each(eng: Engine, shared_data: Path) -> None:
    loads = [
        ("philly", "philly/philly_jobs_adaptdl.csv", "jobs", 82_247),
        ("alibaba-duty-cycle", "alibaba/pod_gpu_duty_cycle_anon.csv", "gpu_duty_cycle", 157_417),
        ("alibaba-model-load", "alibaba/basemodel_update_latency_anon.csv",
         "model_load_latency", 7_531),
    ]  # fmt: skip
    for fmt, path, table, count in loads:
        [result] = ingest(eng, fmt, [str(shared_data / path)])
        assert (result.rows, result.rejected) == ({table: count}, 0)
    assert rows(eng, "SELECT min(ts), max(ts), count(DISTINCT container), max(duty_cycle_pct) "
                     "FROM gpu_duty_cycle") == [
        (datetime(2022, 9, 11, 1, 12, tzinfo=UTC), datetime(2022, 9, 12, 0, 0, tzinfo=UTC), 143,
         pytest.approx(99.6667, abs=1e-4)),
    ]  # fmt: skip
    assert rows(eng, "SELECT min(latency_ms), max(latency_ms) FROM model_load_latency") == [
        (1329.0, 79436.0)
    ]
    again = ingest(eng, "philly", [str(shared_data / "philly/philly_jobs_adaptdl.csv")])
    assert again[0].duplicate_of is not None  # the same bytes twice: one batch
