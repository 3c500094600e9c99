"""Batch semantics every format shares: once, whole or not at all, rejects kept, ids growing."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.ingest import ReadOptions, ingest, ingest_stream
from warehouse.kernel.engine import Engine

INVENTORY = (
    "host,cluster,gpus,gpu_model,pcie_gen\nh1,c1,8,H100,5\nh2,c1,eight,H100,5\nh3,c1,8,A100,4\n"
)


def count(eng: Engine, sql: str) -> int:
    return int(eng.con.sql(sql).fetchall()[0][0])


@pytest.fixture
def eng(fresh_db: Path) -> Iterator[Engine]:
    with Engine(str(fresh_db)) as engine:
        yield engine


def test_one_source_is_one_batch_with_rows_and_rejects(eng: Engine, tmp_path: Path) -> None:
    path = tmp_path / "inv.csv"
    path.write_text(INVENTORY)
    [result] = ingest(eng, "inventory", [str(path)])
    assert result.rows == {"nodes": 2} and result.rejected == 1
    batch = eng.con.sql(
        "SELECT source_format, source_name, rows, rejected, length(content_sha256), target_table, "
        "finished_at >= started_at FROM wanka.ingest_batches"
    ).fetchall()
    assert batch == [("inventory", str(path), 2, 1, 64, "nodes", True)]
    reject = eng.con.sql(
        "SELECT batch_id, line, field, raw, reason FROM wanka.ingest_rejects"
    ).fetchall()
    assert reject == [
        (result.batch_id, 3, "gpus", "h2,c1,eight,H100,5", "gpus: 'eight' is not a valid INTEGER")
    ]
    assert count(eng, f"SELECT count(*) FROM nodes WHERE batch_id = {result.batch_id}") == 2


def test_same_content_twice_is_a_no_op_and_force_reloads(eng: Engine, tmp_path: Path) -> None:
    path = tmp_path / "inv.csv"
    path.write_text(INVENTORY)
    [first] = ingest(eng, "inventory", [str(path)])
    assert first.batch_id is not None
    copy = tmp_path / "copy-under-another-name.csv"
    copy.write_text(INVENTORY)
    [again] = ingest(eng, "inventory", [str(copy)])
    assert again.duplicate_of == first.batch_id and again.batch_id is None
    assert count(eng, "SELECT count(*) FROM wanka.ingest_batches") == 1
    [forced] = ingest(eng, "inventory", [str(path)], force=True)
    assert forced.batch_id is not None and forced.batch_id > first.batch_id
    # nodes hold one row per host: the forced batch replaced, not duplicated
    assert eng.con.sql("SELECT host, batch_id FROM nodes ORDER BY host").fetchall() == [
        ("h1", forced.batch_id),
        ("h3", forced.batch_id),
    ]


def test_batch_ids_only_grow(eng: Engine, tmp_path: Path) -> None:
    ids: list[int] = []
    for i in range(4):
        path = tmp_path / f"inv{i}.csv"
        path.write_text(f"host,gpus\nhost{i},8\n")
        for r in ingest(eng, "inventory", [str(path)]):
            assert r.batch_id is not None
            ids.append(r.batch_id)
    assert ids == sorted(ids) and len(set(ids)) == 4


def test_folder_and_stdin(eng: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "inv"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.csv").write_text("host,gpus\na,8\n")
    (folder / "sub" / "b.csv").write_text("host,gpus\nb,8\n")
    (folder / ".hidden.csv").write_text("host,gpus\nhidden,8\n")
    results = ingest(eng, "inventory", [str(folder)])
    assert [Path(r.source).name for r in results] == ["a.csv", "b.csv"]
    [piped] = ingest(eng, "inventory", ["-"], stdin=io.BytesIO(b"host,gpus\nc,4\n"))
    assert piped.source == "-" and piped.rows == {"nodes": 1}
    assert count(eng, "SELECT count(*) FROM nodes") == 3


def test_upload_stream(eng: Engine) -> None:
    result = ingest_stream(eng, "inventory", io.BytesIO(b"host,gpus\nu,8\n"), "upload.csv")
    assert result.rows == {"nodes": 1} and result.source == "upload.csv"


def test_gzip_input(eng: Engine, tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "inv.csv.gz"
    path.write_bytes(gzip.compress(b"host,gpus\nz,8\n"))
    [result] = ingest(eng, "inventory", [str(path)])
    assert result.rows == {"nodes": 1}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\x01\x02binary" * 100, "binary data, expected an inventory CSV"),
        (b"a,b\n1,2\n", "columns a, b are not in table nodes"),
        (b"host,gpus\nx,eight\ny,nine\n", "nothing could be read as an inventory CSV"),
    ],
)
def test_unreadable_file_stores_nothing(
    eng: Engine, tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    with pytest.raises(UserError, match=message) as caught:
        ingest(eng, "inventory", [str(path)])
    assert str(path) in str(caught.value)
    for table in ("nodes", "wanka.ingest_batches", "wanka.ingest_rejects"):
        assert count(eng, f"SELECT count(*) FROM {table}") == 0


def test_missing_file_is_named_before_anything_loads(eng: Engine, tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text("host,gpus\ng,8\n")
    with pytest.raises(UserError, match=r"nope\.csv: no such file"):
        ingest(eng, "inventory", [str(good), str(tmp_path / "nope.csv")])
    assert count(eng, "SELECT count(*) FROM nodes") == 0


def test_unknown_format_lists_the_known_ones(eng: Engine) -> None:
    with pytest.raises(UserError, match=r"unknown ingest format 'xml'; choose one of: .*inventory"):
        ingest(eng, "xml", ["-"], stdin=io.BytesIO(b""))


def test_csv_and_parquet_need_a_table(eng: Engine, tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("host,gpus\na,8\n")
    with pytest.raises(UserError, match="needs --table"):
        ingest(eng, "csv", [str(path)])
    [result] = ingest(eng, "csv", [str(path)], ReadOptions(table="nodes"))
    assert result.rows == {"nodes": 1}


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from warehouse.kernel.engine import Engine
    from warehouse.ingest import ingest, batch

    original = batch._store
    calls = []

    def store_then_die(*args):
        original(*args)
        calls.append(1)
        if len(calls) == 2:  # half-way: two chunks written inside the transaction
            os.kill(os.getpid(), signal.SIGKILL)

    batch._store = store_then_die
    import warehouse.ingest.tabular as tabular
    tabular.BLOCK_BYTES = 64  # many small chunks
    ingest(Engine(sys.argv[1]), "inventory", [sys.argv[2]])
    """
)


def test_killed_ingest_leaves_no_partial_batch(
    db_path: Path, tmp_path: Path, warehouses: Warehouses
) -> None:
    warehouses.empty(db_path)
    path = tmp_path / "big.csv"
    path.write_text("host,gpus\n" + "".join(f"host{i:05d},8\n" for i in range(2000)))
    done = subprocess.run([sys.executable, "-c", KILLER, str(db_path), str(path)], timeout=120)
    assert done.returncode == -9
    with Engine(str(db_path)) as eng:
        assert count(eng, "SELECT count(*) FROM nodes") == 0
        assert count(eng, "SELECT count(*) FROM wanka.ingest_batches") == 0
        [result] = ingest(eng, "inventory", [str(path)])  # and the retry loads it whole
        assert result.rows == {"nodes": 2000}


@settings(
    max_examples=examples(0.25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.tuples(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), st.integers(0, 16)),
        min_size=1,
        max_size=30,
    )
)
def test_ingest_twice_equals_ingest_once(
    tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses, hosts: list[tuple[str, int]]
) -> None:
    folder = tmp_path_factory.mktemp("twice")
    path = folder / "inv.csv"
    path.write_text("host,gpus\n" + "".join(f"{h},{g}\n" for h, g in hosts))
    snapshots = []
    for forced in (False, True):
        with warehouses.engine() as eng:
            ingest(eng, "inventory", [str(path)])
            ingest(eng, "inventory", [str(path)], force=forced)
            snapshots.append(eng.con.sql("SELECT host, gpus FROM nodes ORDER BY ALL").fetchall())
    once = {h: g for h, g in hosts}  # the last line for a host wins
    assert snapshots[0] == snapshots[1] == sorted(once.items())
