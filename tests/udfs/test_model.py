"""The machinery: one formula evaluated on numbers, numpy arrays, Arrow arrays and as SQL."""

from __future__ import annotations

import math
import random
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from udfs.bandwidth import nic_bottleneck, pcie_gbs
from udfs.collectives import busbw_factor
from udfs.energy import gpu_power_w
from udfs.expr import Choice, Expr, Num, cases, minimum, sql_of, where
from udfs.scheduling import stranded_gpus


def _sql(value: Num) -> str:
    """The SQL of a formula given an `Expr` (the vocabulary returns any `Num`)."""
    assert isinstance(value, Expr), value
    return value.sql


def _array(value: Num) -> np.ndarray[Any, Any]:
    """The result of a formula given numbers (the vocabulary returns any `Num`)."""
    assert isinstance(value, np.ndarray), value
    return value


def test_python_branching_on_a_sql_expression_fails_loudly() -> None:
    with pytest.raises(TypeError, match="no truth value"):
        bool(Expr("x") > 0)


def test_float_literals_are_exact_doubles_in_duckdb() -> None:
    con = duckdb.connect()
    rng = random.Random(7)
    values = [0.9, 1 / 3, 1 - 1e-12, 4.9e-3, 5e-324, 1.7976931348623157e308]
    values += [rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-20, 20) for _ in range(200)]
    for value in values:
        got, kind = con.sql(f"SELECT {sql_of(value)}, typeof({sql_of(value)})").fetchall()[0]
        assert (got, kind) == (value, "DOUBLE"), sql_of(value)


def test_vocabulary_renders_and_computes_alike() -> None:
    x = Expr("x")
    assert _sql(where(x > 1, x, 0)) == "CASE WHEN (x > 1) THEN x ELSE 0 END"
    assert _sql(minimum(x, 2)) == "least(x, 2)"
    assert _sql(cases([(x == 1, 10)])) == "CASE WHEN (x = 1) THEN 10 END"
    assert float(_array(where(np.float64(2), 1.0, 0.0))) == 1.0
    assert math.isnan(float(_array(cases([(np.asarray(False), 10.0)]))))


def test_choice_picks_by_any_spelling_in_any_case() -> None:
    modes = Choice({"none": (), "802.3ad": ("bond4", "lacp")})
    picked = _array(
        modes.pick(np.array(["none", "LACP", "Bond4", "other"]), {"none": 1.0, "802.3ad": 2.0})
    )
    assert picked[:3].tolist() == [1.0, 2.0, 2.0] and math.isnan(picked[3])
    with pytest.raises(KeyError):
        modes.pick("none", {"none": 1.0})


def test_python_null_nan_and_arrays() -> None:
    # NULL (None) and text are outside the formulas' declared types on purpose: a model must
    # handle them at run time.
    assert pcie_gbs(None, 16) is None  # type: ignore[arg-type]
    assert nic_bottleneck(None, 4, 16) is None  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="utilization must be a number in \\[0, 1\\], got nan"):
        gpu_power_w(700, math.nan, 60)
    out = pcie_gbs(np.array([3, 4, 5]), 16)
    assert isinstance(out, np.ndarray) and out.tolist() == pytest.approx(
        [15.754, 31.508, 63.015], abs=1e-3
    )
    with pytest.raises(ValueError, match="pcie_gbs: gen must be an integer from 1 to 7, got 9"):
        pcie_gbs(np.array([4, 9, 5]), 16)
    with pytest.raises(
        ValueError, match=r"pcie_gbs: lanes must be an integer from 1 to 32, got 2\.5"
    ):
        pcie_gbs(4, 2.5)
    with pytest.raises(ValueError, match=r"pcie_gbs: gen must be .* got 'four'"):
        pcie_gbs("four", 16)  # type: ignore[arg-type]
    assert isinstance(stranded_gpus(5, 8, 2), int)
    assert isinstance(nic_bottleneck(400, 4, 16), str)


def test_arrow_form_handles_nulls_per_row() -> None:
    out = busbw_factor.arrow(pa.array(["all_reduce", None, "BROADCAST"]), pa.array([8, 8, None]))
    assert out.to_pylist() == [1.75, None, None]
    text = nic_bottleneck.arrow(pa.array([400.0, 100.0]), pa.array([4, 4]), pa.array([16, 16]))
    assert text.type == pa.string() and text.to_pylist() == ["pcie", "nic"]
    assert stranded_gpus.arrow(pa.array([5]), pa.array([8]), pa.array([2])).type == pa.int32()


def test_sql_null_never_reaches_an_error(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.sql(
        "SELECT busbw_factor(c, n) FROM (VALUES (NULL, 4), ('bogus', NULL), (NULL, 0)) t(c, n)"
    ).fetchall()
    assert rows == [(None,), (None,), (None,)]


def test_sql_accepts_any_numeric_type_for_counts(con: duckdb.DuckDBPyConnection) -> None:
    row = con.sql(
        "SELECT pcie_gbs(4::TINYINT, 16::BIGINT), pcie_gbs(4.0, 16.0::DOUBLE), pcie_gbs('4', '16')"
    ).fetchall()[0]
    assert row == pytest.approx((31.5077,) * 3, abs=1e-4)
    with pytest.raises(
        duckdb.Error, match=r"pcie_gbs: gen must be an integer from 1 to 7, got 4\.5"
    ):
        con.sql("SELECT pcie_gbs(4.5, 16)").fetchall()
    for lanes in ("1e10", "3000000000::BIGINT", "'nan'::DOUBLE"):
        with pytest.raises(duckdb.Error, match="pcie_gbs: lanes must be an integer from 1 to 32"):
            con.sql(f"SELECT pcie_gbs(4, {lanes})").fetchall()
