"""A matrix written by DuckDB (`Compiled.json_sql`, `render.data_json`) is the JSON the
point-by-point path writes: Go's float formatting (no exponent, NaN, +Inf, -Inf, "-0"),
seconds whole or fractional, series merged by labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.promql import evaluate, render


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Engine:
    return Engine(str(warehouses.empty(Path(tmp_path_factory.mktemp("render")) / "w.duckdb")))


VALUES = ["1e-7", "0.00012345", "1e21", "1.5e16", "123456789.0", "0.1", "-0", "+Inf", "-Inf",
          "NaN", "42", "1/3", "2^70", "-2.5e-300"]  # fmt: skip


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize(
    ("start", "step"), [(1_700_000_000_000, 60_000), (1_700_000_000_250, 1_500)]
)
def test_duckdb_writes_what_python_writes(eng: Engine, value: str, start: int, step: int) -> None:
    compiled = evaluate.range_query(f"vector({value})", start, start + 10 * step, step)
    assert compiled.json_sql is not None
    rows = eng.con.execute(compiled.sql).fetchall()
    written = render.answer(compiled, lambda sql: eng.con.execute(sql).fetchall())
    assert isinstance(written, bytes)
    assert json.loads(written) == render.data(compiled, rows)


def test_go_formatting_of_exponents() -> None:
    rows = [('{"a":"1e-07"}', '[1,"1e-07"],[2,"-1.5e+16"],[3,"2.5"]')]
    assert json.loads(render.data_json(rows)) == {
        "resultType": "matrix",
        "result": [{"metric": {"a": "1e-07"},
                    "values": [[1, "0.0000001"], [2, "-15000000000000000"], [3, "2.5"]]}],
    }  # fmt: skip


def test_series_that_share_labels_are_one(eng: Engine) -> None:
    early = 'label_replace(vector(1) and on() (vector(time()) < 1700000300), "x", "a", "", "")'
    expression = f'{early} or label_replace(vector(2), "x", "a", "", "")'
    compiled = evaluate.range_query(expression, 1_700_000_000_000, 1_700_000_600_000, 60_000)
    rows = eng.con.execute(compiled.sql).fetchall()
    written = render.answer(compiled, lambda sql: eng.con.execute(sql).fetchall())
    assert isinstance(written, bytes)
    data = json.loads(written)
    assert data == render.data(compiled, rows)
    [series] = data["result"]
    assert [v for _, v in series["values"]] == ["1"] * 5 + ["2"] * 6
