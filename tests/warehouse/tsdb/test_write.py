"""gpu_metrics over the series dictionary and samples: writes, the migration of an old file."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute
from warehouse.tsdb import tiers
from warehouse.tsdb.append import append

FIXTURES = Path(__file__).parents[1] / "fixtures"
ROOT = Path(__file__).resolve().parents[3]
COLUMNS = "ts, host, gpu, uuid, model, metric, value, labels, batch_id"
#: The layout before 0012, as a plain table: the reference the view must behave like.
PLAIN = """CREATE TABLE plain (ts TIMESTAMPTZ NOT NULL, host VARCHAR NOT NULL, gpu INTEGER,
    uuid VARCHAR, model VARCHAR, metric VARCHAR NOT NULL, value DOUBLE, labels JSON,
    batch_id BIGINT)"""


def _rows(eng: Engine, table: str) -> list[tuple[object, ...]]:
    return sorted(
        eng.con.sql(f"SELECT {COLUMNS} FROM {table}").fetchall(), key=lambda r: repr(r[:8])
    )


def _samples(n: int, *, labels: str | None = None, batch: int = 7) -> pa.Table:
    return pa.table(
        {
            "ts": pa.array([1_761_955_200_000_000 + i * 60_000_000 for i in range(n)])
            .cast(pa.timestamp("us"))
            .cast(pa.timestamp("us", tz="UTC")),
            "host": pa.array([f"h{i % 3}" for i in range(n)]).dictionary_encode(),
            "gpu": pa.array([i % 2 for i in range(n)], pa.int32()),
            "uuid": pa.array([f"GPU-{i % 3}-{i % 2}" for i in range(n)]),
            "metric": pa.array(
                [("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE")[i // 6 % 2] for i in range(n)]
            ),
            "value": pa.array([float(i) for i in range(n)]),
            "labels": pa.array([labels] * n, pa.string()),
            "batch_id": pa.array([batch] * n, pa.int64()),
        }
    )


def test_inserts_add_each_label_set_once_and_keep_labels_as_they_came(
    warehouses: Warehouses,
) -> None:
    with warehouses.engine() as eng:
        cur = eng.cursor()
        pod = '{"pod":"train-0","namespace":"ml","hpc_job":"42"}'
        assert append(cur, _samples(12, labels=pod)).gpu == 12
        assert append(cur, _samples(12, labels=pod, batch=8)).gpu == 12
        series = cur.sql("SELECT count(*) FROM wanka.gpu_series").fetchall()[0][0]
        assert series == 12  # 3 hosts x 2 GPUs x 2 metrics, then the same again: no new ones
        found = cur.sql(
            "SELECT DISTINCT labels, labels->>'hpc_job' FROM gpu_metrics ORDER BY 1"
        ).fetchall()
        assert found == [(pod, "42")]
        assert cur.sql("SELECT count(*), count(DISTINCT batch_id) FROM gpu_metrics").fetchall() == [
            (24, 2)
        ]
        append(cur, _samples(4, labels=None))
        assert cur.sql("SELECT count(*) FROM wanka.gpu_series").fetchall()[0][0] == 16


@pytest.mark.parametrize("dense_every_column", [False, True])
def test_arrow_rows_find_their_series_whatever_their_encoding(
    warehouses: Warehouses, dense_every_column: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Label sets are found in Arrow (telemetry_codes): chunks with their own dictionaries, a
    dictionary that repeats a value, nulls, plain and dictionary columns, and keys made dense
    again after every column still give one series per label set, one sample per row."""
    if dense_every_column:
        monkeypatch.setattr("warehouse.tsdb.codes._KEY_LIMIT", 2)
    one, other = '{"hpc_job":"7"}', '{"pod":"p","namespace":"n"}'
    first = pa.DictionaryArray.from_arrays(
        pa.array([0, 1, None, 2, 0, 1, 1, 0, None, 2, 2, 1], pa.int32()),
        pa.array([one, one, other]),
    )
    second = first.cast(pa.string()).dictionary_encode()  # the same texts, coded otherwise
    rows = _samples(24).drop_columns(["labels"])  # rows i and i + 12: the same label set
    rows = rows.append_column("labels", pa.chunked_array([first, second]))
    with warehouses.engine() as eng:
        cur = eng.cursor()
        assert append(cur, rows).gpu == 24
        cur.execute(PLAIN)
        cur.register("given", rows)
        cur.execute("INSERT INTO plain BY NAME SELECT * FROM given")
        assert _rows(eng, "gpu_metrics") == _rows(eng, "plain")
        distinct = "SELECT DISTINCT metric, host, gpu, uuid, model, labels FROM plain"
        sets = cur.sql(f"SELECT count(*) FROM ({distinct})").fetchall()[0][0]
        assert cur.sql("SELECT count(*) FROM wanka.gpu_series").fetchall()[0][0] == sets == 12


def test_series_ids_follow_metric_then_host_so_a_metric_is_one_id_range(
    warehouses: Warehouses,
) -> None:
    with warehouses.engine() as eng:
        append(eng.cursor(), _samples(12))
        ranges = eng.con.sql(
            "SELECT metric, min(series_id), max(series_id), count(*) FROM wanka.gpu_series "
            "GROUP BY metric ORDER BY 2"
        ).fetchall()
        assert [(m, hi - lo + 1) for m, lo, hi, _ in ranges] == [
            ("DCGM_FI_DEV_GPU_UTIL", 6),
            ("DCGM_FI_DEV_POWER_USAGE", 6),
        ]
        # stored GPU by GPU, a label set's metrics side by side (they compress together)
        stored = eng.con.sql(
            "SELECT host, gpu, metric, series_id FROM wanka.gpu_series ORDER BY rowid"
        ).fetchall()
        assert [r[:3] for r in stored] == sorted(r[:3] for r in stored)
        assert len({r[3] for r in stored}) == 12


def test_a_missing_required_column_and_an_unknown_one_are_errors_that_write_nothing(
    warehouses: Warehouses,
) -> None:
    with warehouses.engine() as eng:
        cur = eng.cursor()
        with (
            pytest.raises(UserError, match=r"gpu_metrics\.host cannot be null"),
            eng.transaction() as tx,
        ):
            append(tx, _samples(4).drop_columns(["host"]))
        with pytest.raises(UserError, match="gpu_metrics has no column 'pod'"):
            append(cur, _samples(4).append_column("pod", pa.nulls(4)))
        with pytest.raises(UserError, match=r"UPDATE of gpu_metrics\.host is not supported"):
            execute(cur, "UPDATE gpu_metrics SET host = 'x'").read_all()
        assert cur.sql("SELECT count(*) FROM wanka.gpu_series").fetchall()[0][0] == 0


#: Statements run on both gpu_metrics and the plain table (named {t}).
STATEMENTS = [
    "INSERT INTO {t} (ts, host, metric, value) VALUES (TIMESTAMPTZ '2026-11-01 00:0{a}:00+00', "
    "'h{a}', 'M{b}', {a}.5)",
    "INSERT INTO {t} (ts, host, gpu, uuid, metric, value, labels) SELECT ts + INTERVAL {a} HOUR, "
    'host, gpu, uuid, metric, value * 2, \'{{"pod":"p{b}"}}\' FROM {t} WHERE value > {b}',
    "INSERT INTO {t} BY NAME SELECT 'h9' AS host, TIMESTAMPTZ '2026-11-02' AS ts, 'M1' AS metric",
    "DELETE FROM {t} WHERE value > {a} AND host = (SELECT min(host) FROM {t})",
    "DELETE FROM {t} AS g WHERE g.metric = 'M{b}' OR g.value IS NULL",
    "UPDATE {t} SET value = value + {a} WHERE host <> 'h{b}'",
    "UPDATE {t} AS g SET ts = g.ts + INTERVAL 1 MINUTE, value = -g.value WHERE g.labels IS NULL",
    "TRUNCATE {t}",
]


@settings(max_examples=examples(0.25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, len(STATEMENTS) - 1), st.integers(0, 5), st.integers(0, 3)),
        min_size=1,
        max_size=10,
    )
)
def test_writes_to_the_view_do_what_they_do_to_a_plain_table(
    warehouses: Warehouses,
    steps: list[tuple[int, int, int]],
) -> None:
    with warehouses.engine() as eng:
        cur = eng.cursor()
        cur.execute(PLAIN)
        for which, a, b in steps:
            sql = STATEMENTS[which]
            ours = execute(cur, sql.format(t="gpu_metrics", a=a, b=b)).read_all()
            theirs = cur.execute(sql.format(t="plain", a=a, b=b)).fetchall()
            assert ours["Count"].to_pylist() == [theirs[0][0]], sql
        strip = "ts, host, gpu, uuid, model, metric, value, labels"  # batch ids differ
        mine = sorted(cur.sql(f"SELECT {strip} FROM gpu_metrics").fetchall(), key=repr)
        plain = sorted(cur.sql(f"SELECT {strip} FROM plain").fetchall(), key=repr)
        assert mine == plain


def _unpacked(tmp_path: Path) -> Path:
    path = tmp_path / "v11.duckdb"
    with gzip.open(FIXTURES / "telemetry_v11.duckdb.gz") as src, path.open("wb") as out:
        shutil.copyfileobj(src, out)
    return path


def _answers_match(path: Path) -> None:
    sys.path.insert(0, str(FIXTURES))
    try:
        from make_v11_warehouse import QUERIES
    finally:
        sys.path.remove(str(FIXTURES))
    wanted = json.loads((FIXTURES / "telemetry_v11.json").read_text())
    with Engine(str(path)) as eng:
        assert eng.schema_version >= 12 > wanted["schema_version"]
        for name, sql in QUERIES.items():
            assert eng.con.sql(sql).fetchall()[0][0] == wanted[name], name
        series = eng.con.sql("SELECT count(*) FROM wanka.gpu_series").fetchall()[0][0]
        assert series == wanted["label_sets"]


def test_a_file_written_by_version_11_migrates_in_place_with_every_row_and_label(
    tmp_path: Path,
) -> None:
    path = _unpacked(tmp_path)
    _answers_match(path)
    with Engine(str(path)) as eng:
        cur = eng.cursor()
        # the changes left pending before the migration are still seen by the next refresh
        for (name,) in cur.sql("SELECT name FROM wanka.dynamic_tables ORDER BY 1").fetchall():
            execute(cur, f"REFRESH DYNAMIC TABLE {name}").read_all()
            query = cur.sql(
                "SELECT definition FROM wanka.dynamic_tables WHERE name = ?", params=[name]
            ).fetchall()[0][0]
            select = query[query.upper().index(" AS\nSELECT") + 4 :] if "\nSELECT" in query else ""
            if select:
                theirs = sorted(cur.sql(select).fetchall(), key=repr)
                assert sorted(cur.sql(f'SELECT * FROM "{name}"').fetchall(), key=repr) == theirs
        # the tiers (version 13) are built from the samples the file held by the first fold
        tiers.fold(cur)
        for tier, recompute in tiers.RECOMPUTE.items():
            held = sorted(cur.sql(f"SELECT * FROM {tier}").fetchall(), key=repr)
            assert held and held == sorted(cur.sql(recompute).fetchall(), key=repr), tier
        # and new writes land in the new layout
        execute(
            cur,
            "INSERT INTO gpu_metrics (ts, host, metric, value) "
            "VALUES (TIMESTAMPTZ '2026-11-03', 'login1', 'node_load1', 3)",
        ).read_all()
        assert cur.sql("SELECT count(*) FROM gpu_metrics WHERE host = 'login1'").fetchall() == [
            (3,)
        ]


KILLED_MIGRATION = """
import sys
from warehouse.kernel import catalog
steps = catalog.migrations()
slow = [s for s in steps if s.version == 12][0]
class Slow(type(slow)):
    @property
    def sql(self):
        return super().sql + "; SELECT sum(i) FROM range(100000000000) t(i);"
catalog.migrations = lambda folder=None: tuple(
    Slow(s.version, s.name, s.path) if s.version == 12 else s for s in steps)
import warehouse.kernel.engine as engine
print("migrating", flush=True)
engine.Engine(sys.argv[1])
"""


def test_a_migration_killed_half_way_leaves_the_old_file_and_runs_again(tmp_path: Path) -> None:
    path = _unpacked(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_MIGRATION, str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "migrating"
    time.sleep(3)  # the step's INSERTs take well under a second here; then it sums a range
    assert proc.poll() is None, "the migration ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with duckdb.connect(str(path)) as con:  # as it was: version 11, gpu_metrics a table
        assert con.sql("SELECT max(version) FROM wanka.schema_migrations").fetchall() == [(11,)]
        tables = con.sql("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'")
        assert ("gpu_metrics",) in tables.fetchall()
    _answers_match(path)
