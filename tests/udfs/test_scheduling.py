"""Fragmentation, scale-out and billing granularity: semantics and the SQL contract."""

from __future__ import annotations

import duckdb
import pytest

from tests.udfs import contract
from udfs import scheduling
from udfs.scheduling import billed_cost, scale_out_s, stranded_gpus

test_from_sql, test_sql_agrees_with_python = contract.tests_for(scheduling)


@pytest.mark.parametrize(
    ("free", "per_node", "job", "stranded"),
    [
        (5, 8, 2, 1),  # within a node: 2 + 2 fit, 1 left over
        (5, 8, 4, 1),
        (6, 8, 3, 0),
        (3, 8, 4, 3),  # a 4-GPU job cannot use 3 free GPUs
        (8, 8, 8, 0),
        (5, 8, 16, 5),  # multi-node jobs take whole nodes: a partly busy node strands all
        (8, 8, 16, 0),  # a fully free node is usable
        (0, 8, 16, 0),
        (7, 8, 9, 7),
    ],
)
def test_stranded_gpus(free: int, per_node: int, job: int, stranded: int) -> None:
    assert stranded_gpus(free, per_node, job) == stranded


def test_stranded_gpus_returns_integer_and_checks_free_against_node(
    con: duckdb.DuckDBPyConnection,
) -> None:
    assert con.sql("SELECT typeof(stranded_gpus(5, 8, 2))").fetchall() == [("INTEGER",)]
    with pytest.raises(
        duckdb.Error, match="stranded_gpus: free_gpus must be <= gpus_per_node, got 9"
    ):
        con.sql("SELECT stranded_gpus(9, 8, 2)").fetchall()
    with pytest.raises(
        ValueError, match="stranded_gpus: free_gpus must be <= gpus_per_node, got 9"
    ):
        stranded_gpus(9, 8, 2)


def test_scale_out_runs_in_waves() -> None:
    assert scale_out_s(1000, 30, 64) == 16 * 30
    assert scale_out_s(64, 30, 64) == 30
    assert scale_out_s(0, 30, 64) == 0


def test_billing_granularity() -> None:
    assert billed_cost(61, 3.0, 3600) == 3.0
    assert billed_cost(61, 3.0, 1) == pytest.approx(61 * 3.0 / 3600)
    assert billed_cost(3601, 3.0, 3600) == 6.0
    assert billed_cost(0, 3.0, 3600) == 0


def test_billing_does_not_charge_a_unit_for_a_rounding_error(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """1.1 / 0.1 is 11.000000000000002 in binary; 1.1 s at 0.1 s granularity is 11 units."""
    assert billed_cost(1.1, 3600, 0.1) == pytest.approx(1.1)
    assert con.sql("SELECT billed_cost(1.1, 3600, 0.1)").fetchall()[0][0] == pytest.approx(1.1)
