"""One way in and out of the telemetry store.

In: `warehouse.tsdb.append` is the only writer of samples (ingest, remote_write, scrape, the
DML rewrite and the simulator all call it), with its derivations inside; Arrow rows appended with
`exactly_once` are stored once however often they are given. Out: outside `warehouse/tsdb/`, no
module of the product names the physical tables of the samples; they read
`warehouse.tsdb.relations`."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import REPO
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.tsdb.append import append
from warehouse.tsdb.relations import SAMPLES_TABLE, SERIES

PHYSICAL = re.compile(r"\b(gpu_samples|gpu_series)\b")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def physical_names(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string constant in `source` (docstrings aside) that names a
    physical table of the samples.

    >>> physical_names("def f():\\n    'gpu_series, said'\\nx = 'FROM wanka.gpu_samples'")
    [(3, 'FROM wanka.gpu_samples')]
    """
    tree = ast.parse(source)
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and PHYSICAL.search(node.value)
    ]


def _product_modules() -> list[Path]:
    tsdb = REPO / "warehouse" / "tsdb"
    return [
        path
        for package in ("warehouse", "service")
        for path in sorted((REPO / package).rglob("*.py"))
        if tsdb not in path.parents
    ]


def test_no_module_outside_the_store_names_its_physical_tables() -> None:
    found = {
        str(path.relative_to(REPO)): hits
        for path in _product_modules()
        if (hits := physical_names(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_check_sees_a_planted_name(tmp_path: Path) -> None:
    planted = 'def f(cur):\n    return cur.sql(f"SELECT * FROM wanka.gpu_samples WHERE {x}")\n'
    assert [line for line, _ in physical_names(planted)] == [2]
    assert SAMPLES_TABLE == ("wanka", "gpu_samples")


def _rows(keys: list[tuple[int, int]], prefix: str = "n") -> pa.Table:
    """gpu_metrics rows: one sample per (GPU, second) key, on hosts named `prefix`0, 1, ..."""
    return pa.table(
        {
            "ts": pa.array([T0 + timedelta(seconds=s) for _, s in keys], pa.timestamp("us", "UTC")),
            "host": [f"{prefix}{g // 8}" for g, _ in keys],
            "gpu": pa.array([g % 8 for g, _ in keys], pa.int32()),
            "metric": ["DCGM_FI_DEV_POWER_USAGE"] * len(keys),
            "value": [float(g * 1000 + s) for g, s in keys],
        }
    )


keys = st.lists(st.tuples(st.integers(0, 15), st.integers(0, 30)), min_size=1, max_size=60)


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


@given(first=keys, again=keys)
def test_exactly_once_appends_store_each_sample_once(
    eng: Engine, first: list[tuple[int, int]], again: list[tuple[int, int]]
) -> None:
    """Appending rows, then rows that overlap them, exactly once == the distinct samples.
    (Each example writes hosts of its own, so the examples share one database.)"""
    prefix = f"h{next(_examples)}-"
    cur = eng.cursor()
    one = append(cur, _rows(first, prefix), exactly_once=True)
    two = append(cur, _rows(again + first, prefix), exactly_once=True)
    distinct = set(first) | set(again)
    assert one.gpu == len(set(first))
    assert one.gpu + two.gpu == len(distinct)
    assert two.duplicates == len(again) + len(first) - two.gpu
    mine = f"FROM gpu_metrics WHERE starts_with(host, '{prefix}')"
    stored = cur.sql(f"SELECT count(*), count(DISTINCT (host, gpu, ts)) {mine}").fetchall()
    assert stored == [(len(distinct), len(distinct))]
    series = f"SELECT count(*) FROM {SERIES} WHERE starts_with(host, '{prefix}')"
    assert cur.sql(series).fetchall()[0][0] == len({g for g, _ in distinct})


_examples = itertools.count()


def test_plain_appends_derive_once_per_batch(warehouses: Warehouses) -> None:
    """An append's derivations run with it: a GPU's first samples give it its 'labels' row."""
    with warehouses.engine() as eng:
        cur = eng.cursor()
        done = append(cur, _rows([(0, 0), (9, 0)]))
        assert done.gpu == 2 and done.batch_id is not None
        labelled = "SELECT host, gpu FROM gpu_attribution WHERE source = 'labels' ORDER BY 1, 2"
        assert cur.sql(labelled).fetchall() == [("n0", 0), ("n1", 1)]
