"""The `wanka` command end to end: arguments, formats, exit codes. Most tests run it in-process
through its entry point (`invoke_wanka`); the help, a query and an Arrow pipe run it as a user
does, in a process of its own (`run_wanka`)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO, invoke_wanka, run_wanka


def test_csv_is_a_header_then_rows(db_path: Path) -> None:
    done = run_wanka("--db", str(db_path), "sql", "select 42 as answer", "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["answer", "42"]


def test_nested_values_and_nulls_in_csv(cli_db: Path) -> None:
    query = "select [1, 2] as l, map {'pod': 'p1'} as m, null::int as n, 'a,b' as s"
    done = invoke_wanka("--db", str(cli_db), "sql", query, "-f", "csv")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header == "l,m,n,s"
    assert row == '"[1, 2]","{""pod"": ""p1""}",,"a,b"'


def test_json_and_ndjson(cli_db: Path) -> None:
    query = (
        "select range as i, range * 0.5 as x, "
        "timestamptz '2026-11-01 00:00:00+00' as ts from range(3)"
    )
    as_json = invoke_wanka("--db", str(cli_db), "sql", query, "--format", "json")
    rows = json.loads(as_json.stdout)
    assert rows[2] == {"i": 2, "x": 1.0, "ts": "2026-11-01T00:00:00+00:00"}
    as_ndjson = invoke_wanka("--db", str(cli_db), "sql", query, "--format", "ndjson")
    assert [json.loads(line) for line in as_ndjson.stdout.splitlines()] == rows
    empty = invoke_wanka("--db", str(cli_db), "sql", "select 1 as a where false", "-f", "json")
    assert json.loads(empty.stdout) == []


def test_arrow_and_parquet_to_a_file(cli_db: Path, tmp_path: Path) -> None:
    query = "select range as i from range(100000)"
    arrow_file, parquet_file = tmp_path / "r.arrow", tmp_path / "r.parquet"
    for fmt, path in (("arrow", arrow_file), ("parquet", parquet_file)):
        done = invoke_wanka(
            "--db", str(cli_db), "sql", query, "--format", fmt, "--output", str(path)
        )
        assert done.returncode == 0, done.stderr
    table = ipc.open_stream(arrow_file.read_bytes()).read_all()
    assert table.num_rows == 100_000 and table.column("i")[-1].as_py() == 99_999
    assert pq.read_table(parquet_file).num_rows == 100_000


def test_arrow_to_a_pipe(cli_db: Path) -> None:
    command = [
        sys.executable,
        "-c",
        "from service.cli import main; main()",
        "--db",
        str(cli_db),
        "sql",
        "select 7 as seven",
        "-f",
        "arrow",
    ]
    done = subprocess.run(command, capture_output=True, cwd=REPO, timeout=120)
    assert ipc.open_stream(io.BytesIO(done.stdout)).read_all().to_pylist() == [{"seven": 7}]


def test_table_format_for_people(cli_db: Path) -> None:
    done = invoke_wanka(
        "--db", str(cli_db), "sql", "select range as i from range(500)", "--max-rows", "5"
    )
    assert done.returncode == 0
    assert "500 rows (5 shown" in done.stderr
    assert done.stdout.count("│") >= 5


def test_sql_from_stdin_and_several_statements(cli_db: Path) -> None:
    script = "create table t (a int); insert into t values (1), (2); select sum(a) as s from t"
    done = invoke_wanka("--db", str(cli_db), "sql", "-", "-f", "csv", input=script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == "3"


def test_db_from_environment(tmp_path: Path) -> None:
    target = tmp_path / "env.duckdb"
    done = invoke_wanka("sql", "select 1", "-f", "csv", env={"WANKA_DB": str(target)})
    assert done.returncode == 0 and target.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sql", "select * from no_such_table"], "Table with name no_such_table does not exist"),
        (["sql", "selec 1"], "syntax error"),
        (["sql", "select nocol from nodes"], 'column "nocol" does not exist at character 8 ('),
        (["sql", "select 1", "--format", "xml"], "'xml' is not one of"),
        (["sql"], "Missing argument"),
        (["no-such-command"], "No such command"),
        (["simulate", "--out", "x", "--gpus", "3"], "--gpus"),
    ],
)
def test_bad_usage_or_input_exits_2_with_one_line(
    cli_db: Path, args: list[str], message: str
) -> None:
    done = invoke_wanka("--db", str(cli_db), *args)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("wanka: error: ")
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_other_failures_exit_1(cli_db: Path) -> None:
    """Running out of memory is the system failing, not the user's input."""
    query = "set memory_limit = '2MB'; select list(range) from range(3000000)"
    done = invoke_wanka("--db", str(cli_db), "sql", query, "-f", "csv")
    assert done.returncode == 1, done.stderr
    assert "Out of Memory" in done.stderr and done.stderr.count("\n") == 1


def test_locked_database_is_one_line_naming_the_holder(cli_db: Path) -> None:
    invoke_wanka("--db", str(cli_db), "sql", "select 1")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time, duckdb; c = duckdb.connect(sys.argv[1]); "
            "print('ready', flush=True); time.sleep(60)",
            str(cli_db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        done = invoke_wanka("--db", str(cli_db), "sql", "select 1")
        assert done.returncode == 1
        assert done.stderr.count("\n") == 1 and f"PID {holder.pid}" in done.stderr
    finally:
        holder.kill()
        holder.wait()


def test_help_lists_the_commands() -> None:
    done = run_wanka("--help")
    assert done.returncode == 0
    for command in ("sql", "simulate", "demo"):
        assert command in done.stdout


def test_simulate_writes_the_real_formats(tmp_path: Path) -> None:
    out = tmp_path / "sim"
    done = invoke_wanka(
        "simulate",
        "--gpus",
        "64",
        "--hours",
        "0.25",
        "--interval-s",
        "60",
        "--start",
        "2026-11-01T00:00:00Z",
        "--seed",
        "1",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "8 hosts" in done.stdout
    assert list((out / "dcgm").glob("*.prom")) and (out / "slurm" / "sacct.txt").is_file()
    assert (out / "inventory" / "nodes.csv").is_file()


def test_simulate_rejects_a_bad_start(tmp_path: Path) -> None:
    done = invoke_wanka("simulate", "--out", str(tmp_path), "--start", "yesterday")
    assert done.returncode == 2 and "ISO 8601" in done.stderr


def test_demo_builds_then_recognises_itself(cli_db: Path) -> None:
    args = ("--db", str(cli_db), "demo", "--no-serve", "--gpus", "64", "--hours", "0.25")
    first = invoke_wanka(*args)
    assert first.returncode == 0, first.stderr
    assert "built the demo warehouse" in first.stdout and "gpu_metrics" in first.stdout
    again = invoke_wanka(*args)
    assert again.returncode == 0 and "already built" in again.stdout
    counted = invoke_wanka(
        "--db", str(cli_db), "sql", "select count(*) as n from nodes", "-f", "csv"
    )
    assert counted.stdout.splitlines() == ["n", "8"]


def test_default_file_wanka_duckdb_keeps_the_wanka_schema_reachable(tmp_path: Path) -> None:
    """Regression: a file named wanka.duckdb must not shadow the `wanka` system schema."""
    env = {"WANKA_DB": ""}
    done = invoke_wanka(
        "sql",
        "select count(*) as n from wanka.schema_migrations",
        "-f",
        "csv",
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "wanka.duckdb").is_file() and int(done.stdout.splitlines()[1]) >= 3
