"""The engine: where the file is, opening it, upgrading it, refusing what it must."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from warehouse.errors import DatabaseLocked, SchemaTooNew, UserError
from warehouse.kernel import catalog, engine, migrations, reference
from warehouse.kernel.engine import Engine, resolve_db_path

_ORIGINAL_MIGRATIONS = catalog.migrations

BASE_TABLES = ("gpu_metrics", "jobs", "job_steps", "job_events", "nodes", "sites", "clusters")
SYSTEM_TABLES = ("ingest_batches", "ingest_rejects", "dynamic_tables", "refresh_history")


def test_db_path_option_then_env_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WANKA_DB", raising=False)
    assert resolve_db_path(None) == "wanka.duckdb"
    monkeypatch.setenv("WANKA_DB", "/tmp/from-env.duckdb")
    assert resolve_db_path(None) == "/tmp/from-env.duckdb"
    assert resolve_db_path("/tmp/from-option.duckdb") == "/tmp/from-option.duckdb"
    assert resolve_db_path(":memory:") == ":memory:"


def test_fresh_file_gets_every_table_and_the_latest_version(db_path: Path) -> None:
    with Engine(str(db_path)) as eng:
        tables = set(
            eng.con.sql(
                "SELECT schema_name || '.' || table_name FROM duckdb_tables() UNION ALL "
                "SELECT schema_name || '.' || view_name FROM duckdb_views() WHERE NOT internal"
            ).fetchall()
        )
        names = {t for (t,) in tables}
        for table in (*BASE_TABLES, "gpu_models", "nic_models"):
            assert f"main.{table}" in names
        for table in (*SYSTEM_TABLES, "schema_migrations"):
            assert f"wanka.{table}" in names
        assert eng.schema_version == catalog.latest_version() >= 3
        recorded = eng.con.sql("SELECT version, name FROM wanka.schema_migrations ORDER BY 1")
        assert [v for v, _ in recorded.fetchall()] == [m.version for m in catalog.migrations()]


def test_reopening_changes_nothing(db_path: Path) -> None:
    Engine(str(db_path)).close()
    with Engine(str(db_path)) as eng:
        assert migrations.migrate(eng.con) == []
        assert reference.load_reference_tables(eng.con) == []


def test_contract_columns_exist(db_path: Path) -> None:
    """The columns SQL_API.md names for each table."""
    wanted = {
        "gpu_metrics": "ts host gpu uuid model metric value",
        "jobs": "job_id user account partition submit_at start_at end_at state gpus nodes "
        "node_list exit_code",
        "nodes": "host cluster site gpu_model gpus nic_model nic_count pcie_gen "
        "storage_nic_gbps storage_nic_count bond_mode",
        "gpu_models": "model vendor tdp_w bf16_tflops hbm_gb hbm_tbs scaleup_gbs pcie_gen",
        "nic_models": "model line_rate_gbps pcie_gen pcie_lanes",
        "wanka.ingest_batches": "batch_id source_format source_name content_sha256 rows rejected "
        "started_at finished_at",
        "wanka.ingest_rejects": "batch_id line raw reason",
        "wanka.dynamic_tables": "name definition freshness refresh_mode refresh_mode_reason "
        "last_refresh_at data_timestamp lag_s state",
        "wanka.refresh_history": "name started_at finished_at refresh_mode rows_inserted "
        "rows_deleted data_timestamp state error",
    }
    with Engine(str(db_path)) as eng:
        for table, columns in wanted.items():
            have = set(eng.table_schema(table).names)
            assert set(columns.split()) <= have, (table, set(columns.split()) - have)
        types = {f.name: f.type for f in eng.table_schema("jobs")}
        assert types["node_list"] == pa.list_(pa.string())
        assert pa.types.is_timestamp(types["submit_at"]) and types["submit_at"].tz == "UTC"


def test_old_file_is_upgraded(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written before a new schema step gains that step on open, keeping its data."""
    Engine(str(db_path)).close()
    with Engine(str(db_path)) as eng:
        eng.con.execute("INSERT INTO nodes (host, gpus) VALUES ('h1', 8)")
        old_version = eng.schema_version
    newer = tmp_path / "newer"
    newer.mkdir()
    for step in catalog.migrations():
        (newer / step.path.name).write_text(step.sql)
    (newer / f"{old_version + 1:04d}_rack_power.sql").write_text(
        "ALTER TABLE nodes ADD COLUMN rack_power_kw DOUBLE DEFAULT 40;"
    )
    monkeypatch.setattr(catalog, "migrations", lambda folder=None: _ORIGINAL_MIGRATIONS(newer))
    with Engine(str(db_path)) as eng:
        assert eng.schema_version == old_version + 1
        assert eng.con.sql("SELECT host, gpus, rack_power_kw FROM nodes").fetchall() == [
            ("h1", 8, 40.0)
        ]


def test_newer_file_is_refused(db_path: Path) -> None:
    Engine(str(db_path)).close()
    con = duckdb.connect(str(db_path))
    con.execute(
        "INSERT INTO wanka.schema_migrations (version, name, sha256) VALUES (999, 'future', '')"
    )
    con.close()
    with pytest.raises(SchemaTooNew, match=r"schema version 999 .* upgrade wanka"):
        Engine(str(db_path))


def test_missing_folder_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"folder .* is missing"):
        Engine(str(tmp_path / "nowhere" / "w.duckdb"))


def test_failed_schema_step_leaves_nothing_half_done(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "0001_ok.sql").write_text("CREATE TABLE a (x INTEGER);")
    (broken / "0002_bad.sql").write_text("CREATE TABLE b (x INTEGER); CREATE TABLE a (x INTEGER);")
    monkeypatch.setattr(catalog, "migrations", lambda folder=None: _ORIGINAL_MIGRATIONS(broken))
    monkeypatch.setattr(catalog, "reference_tables", lambda folder=None: ())
    con = duckdb.connect(str(db_path))
    with pytest.raises(RuntimeError, match=r"0002_bad\.sql failed"):
        migrations.migrate(con)
    assert migrations.applied_version(con) == 1
    tables = {t for (t,) in con.sql("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "a" in tables and "b" not in tables


def test_reference_table_reloads_when_its_csv_changes(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Engine(str(db_path)) as eng:
        before = eng.con.sql("SELECT count(*) FROM nic_models").fetchall()[0][0]
    original = next(r for r in catalog.reference_tables() if r.table == "nic_models")
    edited = tmp_path / "nic_models.csv"
    lines = original.path.read_text().splitlines()
    edited.write_text("\n".join(lines[:2]) + "\n")  # header and one row
    monkeypatch.setattr(
        catalog,
        "reference_tables",
        lambda folder=None: (catalog.ReferenceTable("nic_models", edited),),
    )
    with Engine(str(db_path)) as eng:
        assert eng.con.sql("SELECT count(*) FROM nic_models").fetchall()[0][0] == 1 < before


LOCK_HOLDER = textwrap.dedent(
    """
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1])
    print("ready", flush=True)
    time.sleep(60)
    """
)


def test_a_held_file_names_the_process(db_path: Path) -> None:
    Engine(str(db_path)).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(db_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(DatabaseLocked) as caught:
            Engine(str(db_path))
        message = str(caught.value)
        assert f"PID {holder.pid}" in message and "\n" not in message
        assert str(db_path) in message and "stop that process" in message
    finally:
        holder.kill()
        holder.wait()


def test_row_groups_are_the_engines_size_in_a_new_file_and_an_old_one(db_path: Path) -> None:
    """A scan walks every row group's zone map: the file holds fewer, larger ones."""
    plain = duckdb.connect(str(db_path))  # a file DuckDB made with its own default (122,880)
    plain.execute("CREATE TABLE before AS SELECT range AS i FROM range(300000)")
    plain.close()

    def sizes(eng: Engine, table: str) -> list[int]:
        eng.con.execute("CHECKPOINT")
        return [
            n
            for (n,) in eng.con.execute(
                "SELECT sum(count) FROM pragma_storage_info(?) WHERE column_path = '[0]' "
                "GROUP BY row_group_id ORDER BY 1",
                [f"{engine.CATALOG}.{table}"],
            ).fetchall()
        ]

    with Engine(str(db_path)) as eng:
        eng.con.execute("CREATE TABLE after AS SELECT range AS i FROM range(1500000)")
        assert sorted(sizes(eng, "after")) == [
            1_500_000 - engine.ROW_GROUP_SIZE,
            engine.ROW_GROUP_SIZE,
        ]
        assert sum(sizes(eng, "before")) == 300_000  # what was there reads as it was
    with Engine(str(db_path), read_only=True) as eng:
        assert eng.con.execute("SELECT count(*) FROM after").fetchone() == (1_500_000,)


@pytest.mark.parametrize("given", ["lots", "-5", "100", "1e6"])
def test_a_bad_row_group_size_is_a_user_error_naming_the_variable(
    given: str, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WANKA_ROW_GROUP_SIZE", given)
    with pytest.raises(UserError, match=r"\$WANKA_ROW_GROUP_SIZE must be .* not '"):
        Engine(str(db_path))
    assert not db_path.exists()  # nothing was created


def test_the_row_group_size_can_be_set(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANKA_ROW_GROUP_SIZE", "204800")
    with Engine(str(db_path)) as eng:
        eng.con.execute("CREATE TABLE t AS SELECT range AS i FROM range(300000)")
        eng.con.execute("CHECKPOINT")
        groups = eng.con.execute(
            "SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('warehouse.t')"
        ).fetchone()
    assert groups == (2,)
