"""What every model function must do from SQL, checked the same way for each.

For a model: its example gives the Python value from SQL; NULL in any argument gives NULL;
each argument outside its domain raises an error naming function, argument and value, the
same message in SQL and Python; and over more rows than one DuckDB vector (2,048), with NULLs
scattered in, SQL agrees with the pure Python function row by row. Each tests/udfs/test_<module>
runs these for the functions of its module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from udfs.expr import sql_of
from udfs.model import Model
from udfs.params import Param

#: More rows than one DuckDB vector, so that execution spans several chunks.
ROWS = 2_100
_ARROW = {
    "DOUBLE": pa.float64(),
    "INTEGER": pa.int64(),
    "VARCHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
}


def models_in(module: Any) -> list[Model[..., Any]]:
    return [v for v in vars(module).values() if isinstance(v, Model)]


def literal(value: Any) -> str:
    return "NULL" if value is None else sql_of(value)


def call(model: Model[..., Any], args: Sequence[Any]) -> str:
    return f"SELECT {model.name}({', '.join(literal(a) for a in args)})"


def sql_value(con: duckdb.DuckDBPyConnection, query: str) -> Any:
    cur = con.cursor()
    try:
        return cur.sql(query).fetchall()[0][0]
    finally:
        cur.close()


def same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-300)
    return bool(a == b)


# -- values inside and outside each argument's domain ------------------------------------------


def strategy(param: Param) -> st.SearchStrategy[Any]:
    """Valid values of realistic magnitude (what agreement between SQL and Python needs)."""
    if param.choice is not None:
        spelled = st.sampled_from(param.choice.spellings)
        return spelled.flatmap(lambda s: st.sampled_from([s, s.upper(), s.title()]))
    if param.type == "BOOLEAN":
        return st.booleans()
    assert param.low is not None and param.high is not None
    if param.type == "INTEGER":
        return st.integers(int(param.low), int(min(param.high, 64 if param.low <= 1 else 4096)))
    low = max(param.low, 1e-6) if param.low > 0 else param.low
    return st.floats(low, min(param.high, 1e9), allow_nan=False, allow_subnormal=False)


def invalid(param: Param) -> list[Any]:
    """Values outside the domain, as a careless query would pass them."""
    if param.choice is not None:
        return ["bogus", ""]
    if param.type == "BOOLEAN":
        return []
    assert param.low is not None and param.high is not None
    if param.type == "INTEGER":
        values: list[Any] = [int(param.low) - 1, param.low + 0.5]
        if param.high < 2**31 - 1:
            values.append(int(param.high) + 1)
        return values
    values = [math.nan, -1.0 if param.low >= 0 else param.low - 1]
    if param.low > 0:
        values.append(0.0)
    if param.low >= 1:
        values.append(0.5)
    if math.isfinite(param.high):
        values.append(param.high + 0.5)
    return values


# -- the checks --------------------------------------------------------------------------------


def check_example(con: duckdb.DuckDBPyConnection, model: Model[..., Any]) -> None:
    expected = model(*model.example)
    assert same(sql_value(con, call(model, model.example)), expected)
    assert same(sql_value(con, f"SELECT {model.example_call}"), expected)
    kind = sql_value(con, f"SELECT typeof({model.example_call})")
    assert kind == model.returns, f"{model.name} returns {kind}"


def check_nulls(con: duckdb.DuckDBPyConnection, model: Model[..., Any]) -> None:
    for position in range(len(model.params)):
        args = list(model.example)
        args[position] = None
        assert sql_value(con, call(model, args)) is None, (model.name, position)
        assert model(*args) is None
        # a NULL wins over a bad value elsewhere, in SQL as in Python
        for other, param in enumerate(model.params.values()):
            for bad in invalid(param)[:1] if other != position else []:
                args_bad = list(args)
                args_bad[other] = bad
                assert sql_value(con, call(model, args_bad)) is None, (model.name, other)
                assert model(*args_bad) is None


def check_errors(con: duckdb.DuckDBPyConnection, model: Model[..., Any]) -> None:
    for position, (name, param) in enumerate(model.params.items()):
        for bad in invalid(param):
            args = list(model.example)
            args[position] = bad
            with pytest.raises(ValueError) as python_error:
                model(*args)
            message = str(python_error.value)
            assert message.startswith(f"{model.name}: {name} must be "), message
            with pytest.raises(duckdb.Error) as sql_error:
                sql_value(con, call(model, args))
            assert message in str(sql_error.value), (str(sql_error.value), message)


def check_rows(
    con: duckdb.DuckDBPyConnection, model: Model[..., Any], rows: list[tuple[Any, ...]]
) -> None:
    """Repeat `rows` past one vector, run the macro over them, compare with Python per row."""
    rows = [r for r in rows if _relations_hold(model, r)]
    if not rows:
        return
    repeated = [rows[i % len(rows)] for i in range(max(ROWS, len(rows)))]
    columns = {"i": pa.array(range(len(repeated)), pa.int64())}
    for j, param in enumerate(model.params.values()):
        columns[f"a{j}"] = pa.array([r[j] for r in repeated], _ARROW[param.type])
    table = pa.table(columns)
    cur = con.cursor()
    try:
        cur.register("rows_in", table)
        args = ", ".join(f"a{j}" for j in range(len(model.params)))
        got = [
            v for (v,) in cur.sql(f"SELECT {model.name}({args}) FROM rows_in ORDER BY i").fetchall()
        ]
    finally:
        cur.close()
    expected = {row: model(*row) for row in rows}
    for row, value in zip(repeated, got, strict=True):
        assert same(value, expected[row]), (model.name, row, value, expected[row])
    complete = [r for r in rows if None not in r]
    if complete:
        vectorised = model.numpy(
            *(np.array([r[j] for r in complete]) for j in range(len(model.params)))
        )
        for row, value in zip(complete, vectorised.tolist(), strict=True):
            assert same(value, expected[row]), (model.name, row, value)


def _relations_hold(model: Model[..., Any], row: tuple[Any, ...]) -> bool:
    if None in row:
        return True
    return all(bool(rule.holds(*map(np.asarray, row))) for rule in model.relations)


def random_rows(model: Model[..., Any], seed: int, count: int = 300) -> list[tuple[Any, ...]]:
    """Seeded random valid rows, about one value in twenty NULL."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(count):
        row = []
        for param in model.params.values():
            row.append(None if rng.random() < 0.05 else _draw(param, rng))
        rows.append(tuple(row))
    return rows


def _draw(param: Param, rng: np.random.Generator) -> Any:
    if param.choice is not None:
        spelling = str(rng.choice(param.choice.spellings))
        return spelling.upper() if rng.random() < 0.3 else spelling
    if param.type == "BOOLEAN":
        return bool(rng.random() < 0.5)
    assert param.low is not None and param.high is not None
    if param.type == "INTEGER":
        return int(rng.integers(int(param.low), int(min(param.high, 64)) + 1))
    low = max(param.low, 1e-3)
    high = min(param.high, 1e6)
    return float(np.exp(rng.uniform(np.log(low), np.log(high))) if high > low else low)


def row_lists(model: Model[..., Any]) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    """Hypothesis: a few rows of valid values, about one value in four NULL."""
    values = [strategy(p) for p in model.params.values()]
    row = st.tuples(*(st.one_of(st.none(), v, v, v) for v in values))
    return st.lists(row, min_size=1, max_size=30)


def tests_for(module: Any) -> tuple[Any, Any]:
    """The two SQL contract tests, parametrised over the model functions of `module`."""
    models = models_in(module)
    by_name = pytest.mark.parametrize("model", models, ids=[m.name for m in models])

    @by_name
    def test_from_sql(con: duckdb.DuckDBPyConnection, model: Model[..., Any]) -> None:
        """Normal value, NULL in each argument, each domain error, and 2,100 random rows."""
        check_example(con, model)
        check_nulls(con, model)
        check_errors(con, model)
        check_rows(con, model, random_rows(model, seed=len(model.name)))

    @by_name
    @settings(max_examples=examples(0.08), deadline=None)
    @given(data=st.data())
    def test_sql_agrees_with_python(
        con: duckdb.DuckDBPyConnection, model: Model[..., Any], data: st.DataObject
    ) -> None:
        """Hypothesis rows, repeated past one vector: the macro equals the Python function."""
        check_rows(con, model, data.draw(row_lists(model)))

    return test_from_sql, test_sql_agrees_with_python
