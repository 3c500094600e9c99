"""A change of gpu_attribution over a large fact table (regroup.FULL_MIN_ROWS) recomputes only
the day buckets of job_gpu_usage_daily its changed rows reach (warehouse.dynamic.reached): the
earlier days stay as they were, and the table still equals its query. A row that reaches back
without bound (a GPU's 'labels' row) still refreshes the whole table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.warehouse.dynamic.test_shipped import same_rows
from tests.warehouse.samples import insert_samples, minute
from tests.warehouses import Warehouses
from warehouse.dynamic import regroup
from warehouse.dynamic.shipped import definition, shipped_folder
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

DAY = 24 * 60
TABLE = "job_gpu_usage_daily"


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    """Three days of unlabelled samples from two GPUs of n1 and n2, a job on n1 from the third
    day's noon (whole node), and the table refreshed over them."""
    with warehouses.engine() as engine:
        con = engine.con
        con.execute("INSERT INTO nodes (host, cluster, gpus) VALUES ('n1', 'c', 2), ('n2', 'c', 2)")
        insert_samples(
            con,
            [
                {"ts": minute(m), "host": h, "gpu": g, "uuid": f"GPU-{h}-{g}", "model": "H100"}
                | {"metric": "DCGM_FI_DEV_GPU_UTIL", "value": float(m % 97)}
                for m in range(0, 3 * DAY, 30)
                for h in ("n1", "n2")
                for g in (0, 1)
            ],
        )
        _job(con, "early", "n2", 10)  # on n2 from the first day
        _job(con, "late", "n1", 2 * DAY + 12 * 60)
        execute(con, definition(shipped_folder() / f"{TABLE}.sql")).read_all()
        yield engine


def _job(con: object, job: str, host: str, start: int) -> None:
    con.execute(  # type: ignore[attr-defined]
        "INSERT INTO jobs (job_id, start_at, gpus, state, node_list) "
        "VALUES (?, ?, 2, 'RUNNING', [?])",
        [job, minute(start), host],
    )


def _refresh(eng: Engine) -> dict[str, object]:
    cur = eng.cursor()
    try:
        done: dict[str, object] = execute(cur, f"REFRESH DYNAMIC TABLE {TABLE}").read_all()
        return done.to_pylist()[0]  # type: ignore[attr-defined, no-any-return]
    finally:
        cur.close()


def _days(eng: Engine) -> list[tuple[Any, ...]]:
    return eng.con.execute(f"SELECT * FROM {TABLE} ORDER BY ALL").fetchall()


def test_a_job_ending_recomputes_the_days_from_its_start(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regroup, "FULL_MIN_ROWS", 1)
    first_two = [r for r in _days(eng) if r[0] < minute(2 * DAY)]
    assert any(r[1] == "early" for r in first_two) and first_two
    eng.con.execute(
        "UPDATE jobs SET state = 'COMPLETED', end_at = ? WHERE job_id = 'late'",
        [minute(2 * DAY + 20 * 60)],
    )
    done = _refresh(eng)
    assert done["refresh_mode"] == "incremental", done
    assert str(done["reason"]).startswith(
        "gpu_attribution changed: recomputed the INTERVAL '1' DAY buckets from 2026-11-03 00:00"
    ), done
    assert [r for r in _days(eng) if r[0] < minute(2 * DAY)] == first_two
    cur = eng.cursor()
    same_rows(cur, TABLE)
    deleted = done["rows_deleted"]
    assert isinstance(deleted, int) and 0 < deleted < len(_days(eng))  # the third day's rows
    cur.close()


def test_a_change_reaching_the_first_day_recomputes_from_it(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regroup, "FULL_MIN_ROWS", 1)
    eng.con.execute("DELETE FROM jobs WHERE job_id = 'early'")
    done = _refresh(eng)
    assert done["refresh_mode"] == "incremental", done
    assert "buckets from 2026-11-01 00:00" in str(done["reason"]), done
    assert not [r for r in _days(eng) if r[1] == "early"]
    same_rows(eng.cursor(), TABLE)


def test_a_row_without_a_start_refreshes_the_whole_table(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regroup, "FULL_MIN_ROWS", 1)
    eng.con.execute(
        "INSERT INTO gpu_attribution (job_id, host, gpu, source) VALUES (NULL, 'n1', 0, 'labels')"
    )
    eng.con.execute("DELETE FROM gpu_attribution WHERE source = 'labels' AND host = 'n1'")
    done = _refresh(eng)
    assert done["refresh_mode"] == "full", done
    assert str(done["reason"]).startswith("gpu_attribution changed: the groups it touches"), done
    same_rows(eng.cursor(), TABLE)


def test_late_samples_in_the_same_refresh_move_the_first_bucket_back(
    eng: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job change reaches the third day only, but new samples of the first day arrived
    since the last refresh: recomputing from the third day on would leave them out."""
    monkeypatch.setattr(regroup, "FULL_MIN_ROWS", 1)
    insert_samples(
        eng.con,
        [
            {"ts": minute(m), "host": "n2", "gpu": 0, "uuid": "GPU-n2-0", "model": "H100"}
            | {"metric": "DCGM_FI_DEV_GPU_UTIL", "value": 1.0}
            for m in range(15, 600, 30)
        ],
    )
    eng.con.execute("DELETE FROM jobs WHERE job_id = 'late'")
    done = _refresh(eng)
    assert done["refresh_mode"] == "incremental", done
    assert "buckets from 2026-11-01 00:00" in str(done["reason"]), done
    same_rows(eng.cursor(), TABLE)
