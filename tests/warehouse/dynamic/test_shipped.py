"""The shipped dynamic tables: installed by the demo, each equal to its defining query."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from tests.demo_clusters import TINY
from tests.warehouses import Warehouses
from warehouse.dynamic import regroup
from warehouse.dynamic.history import RefreshResult
from warehouse.dynamic.schedule import run_due
from warehouse.dynamic.shipped import install_shipped, shipped_folder
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

SHIPPED = sorted(p.stem for p in shipped_folder().glob("*.sql"))


#: A demo without faults may rightly have no health finding, and no evidence of risk.
MAY_BE_EMPTY = {"health_findings", "node_risk", "node_risk_fleet", "gpu_risk"}


def same_rows(cur: duckdb.DuckDBPyConnection, name: str) -> None:
    """The table's rows are its definition's rows (floats to 9 significant digits)."""
    [(query,)] = cur.execute(
        "SELECT definition FROM wanka.dynamic_tables WHERE name = ?", [name]
    ).fetchall()

    def rows(sql: str) -> list[tuple[object, ...]]:
        out = [
            tuple(float(f"{v:.9g}") if isinstance(v, float) and math.isfinite(v) else v for v in r)
            for r in cur.execute(sql).fetchall()
        ]
        return sorted(out, key=repr)

    table = rows(f'SELECT * FROM main."{name}"')
    assert table or name in MAY_BE_EMPTY, name
    assert table == rows(query), name


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Path:
    """The tiny demo: it installs and refreshes every file of sql/dynamic/."""
    return warehouses.demo(TINY, tmp_path_factory.mktemp("shipped") / "w.duckdb")


def test_every_file_says_what_it_answers() -> None:
    assert {"xid_errors_by_model", "energy_cluster_daily"} <= set(SHIPPED)
    for path in shipped_folder().glob("*.sql"):
        text = path.read_text()
        assert text.startswith(f"-- {path.stem}: "), path
        assert f"CREATE DYNAMIC TABLE {path.stem} WITH (freshness = " in text


def test_demo_installs_every_shipped_table_equal_to_its_query(demo: Path) -> None:
    with Engine(str(demo)) as eng:
        cur = eng.cursor()
        rows = cur.execute(
            "SELECT name, state, resolved_mode, refresh_mode_reason FROM wanka.dynamic_tables "
            "ORDER BY name"
        ).fetchall()
        assert [r[0] for r in rows] == SHIPPED and {r[1] for r in rows} == {"active"}
        modes = {r[0]: (r[2], r[3]) for r in rows}
        assert modes["energy_cluster_daily"] == ("aggregate", None)  # a join, merged
        for name in SHIPPED:
            same_rows(cur, name)
        assert install_shipped(eng) == []  # already there
        cur.close()


def test_shipped_tables_follow_new_data_through_the_scheduler(demo: Path) -> None:
    with Engine(str(demo)) as eng:
        cur = eng.cursor()
        # another 90 minutes of telemetry and jobs, shifted past the simulated window
        execute(
            cur,
            "INSERT INTO gpu_metrics (ts, host, gpu, uuid, model, metric, value, labels) "
            "SELECT ts + INTERVAL 90 MINUTE, host, gpu, uuid, model, metric, value + 1, labels "
            "FROM gpu_metrics",
        ).read_all()
        cur.execute(
            "INSERT INTO jobs (job_id, account, start_at, gpus, elapsed_s) "
            "SELECT job_id || '_again', account, start_at + INTERVAL 1 DAY, gpus, elapsed_s "
            "FROM jobs WHERE start_at IS NOT NULL"
        )
        done = run_due(cur, datetime.now(UTC) + timedelta(days=1))
        assert sorted(d.name for d in done) == SHIPPED
        assert all(isinstance(d, RefreshResult) for d in done)
        modes = {d.name: d.refresh_mode for d in done if isinstance(d, RefreshResult)}
        assert modes["gpu_hourly_host"] == "incremental"
        # new samples joined with nodes as it is fold into the per-day, per-cluster state
        assert modes["energy_cluster_daily"] == "incremental"
        for name in SHIPPED:
            same_rows(cur, name)
        cur.close()


def test_a_host_moved_to_another_cluster_moves_its_energy(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dimension-side update: the old and the new cluster's days are recomputed, or, on a
    fact table past regroup.FULL_MIN_ROWS, the table is refreshed fully and says why."""
    with Engine(str(demo)) as eng:
        cur = eng.cursor()
        first = "(SELECT min(host) FROM nodes)"
        cur.execute(f"UPDATE nodes SET cluster = 'moved' WHERE host = {first}")
        with monkeypatch.context() as patched:
            patched.setattr(regroup, "FULL_MIN_ROWS", 10**12)
            done = execute(cur, "REFRESH DYNAMIC TABLE energy_cluster_daily").read_all()
        assert done.to_pylist()[0]["refresh_mode"] == "incremental", done
        reason = cur.execute(
            "SELECT refresh_mode_reason FROM wanka.refresh_history "
            "WHERE name = 'energy_cluster_daily' ORDER BY started_at DESC LIMIT 1"
        ).fetchall()[0][0]
        assert reason.startswith("update of 1 rows on nodes"), reason
        moved = "SELECT count(*) FROM energy_cluster_daily WHERE cluster = 'moved'"
        assert cur.execute(moved).fetchall()[0][0] > 0
        same_rows(cur, "energy_cluster_daily")
        cur.execute(f"UPDATE nodes SET cluster = 'moved again' WHERE host = {first}")
        with monkeypatch.context() as patched:  # as over a fact table past the threshold
            patched.setattr(regroup, "FULL_MIN_ROWS", 1)
            done = execute(cur, "REFRESH DYNAMIC TABLE energy_cluster_daily").read_all()
        row = done.to_pylist()[0]
        assert row["refresh_mode"] == "full", row
        assert row["reason"].startswith("nodes changed: the groups it touches are found only")
        same_rows(cur, "energy_cluster_daily")
        cur.close()


def _upgraded_copy(demo: Path, tmp_path: Path) -> Engine:
    copy = tmp_path / "older.duckdb"
    copy.write_bytes(demo.read_bytes())
    return Engine(str(copy))


def test_a_changed_shipped_file_is_made_again_with_the_shipped_tables_that_read_it(
    demo: Path, tmp_path: Path
) -> None:
    """As after an upgrade whose node_risk_settings.sql changed: it and its readers are
    dropped and created from the new files, equal to their queries; once only."""
    from warehouse.dynamic import catalog
    from warehouse.dynamic.shipped import ensure_shipped, source_md5

    with _upgraded_copy(demo, tmp_path) as eng:
        cur = eng.cursor()
        cur.execute(
            "UPDATE wanka.shipped_tables SET source_md5 = 'older' WHERE name = 'node_risk_settings'"
        )
        readers, stack = {"node_risk_settings"}, ["node_risk_settings"]
        while stack:
            for reader in catalog.consumers(cur, stack.pop()):
                readers.add(reader)
                stack.append(reader)
        assert {"node_risk", "gpu_risk"} <= readers
        assert set(ensure_shipped(eng)) == readers
        for name in readers:
            same_rows(cur, name)
        recorded = dict(cur.execute("SELECT name, source_md5 FROM wanka.shipped_tables").fetchall())
        assert all(recorded[p.stem] == source_md5(p) for p in shipped_folder().glob("*.sql"))
        assert ensure_shipped(eng) == []


def test_a_table_given_before_versions_is_replaced_only_when_its_columns_differ(
    demo: Path, tmp_path: Path
) -> None:
    """A warehouse of a wanka before versions were recorded: gpu_risk with an older shape is
    made again from the file; the others, with the columns their files give, keep their rows
    and get their version; one a person dropped stays dropped."""
    from warehouse.dynamic import catalog
    from warehouse.dynamic.shipped import ensure_shipped

    with _upgraded_copy(demo, tmp_path) as eng:
        cur = eng.cursor()
        execute(cur, "DROP DYNAMIC TABLE gpu_risk").read_all()
        execute(
            cur,
            "CREATE DYNAMIC TABLE gpu_risk WITH (freshness = '5 minutes') AS "
            "SELECT node, gpu, count(*) AS precursors FROM node_signals GROUP BY node, gpu",
        ).read_all()
        execute(cur, "DROP DYNAMIC TABLE xid_errors_by_model").read_all()
        cur.execute("UPDATE wanka.shipped_tables SET source_md5 = NULL")
        assert ensure_shipped(eng) == ["gpu_risk"]
        assert "growth" in [c[0] for c in cur.execute("SELECT * FROM gpu_risk LIMIT 0").description]
        assert "xid_errors_by_model" not in catalog.names(cur)
        [(unset,)] = cur.execute(
            "SELECT count(*) FROM wanka.shipped_tables WHERE source_md5 IS NULL"
        ).fetchall()
        assert unset == 0 and ensure_shipped(eng) == []
