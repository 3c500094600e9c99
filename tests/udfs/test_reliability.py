"""MTBF of GPUs and of jobs that span them: published figures and the SQL contract."""

from __future__ import annotations

import math

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.udfs import contract
from udfs import reliability
from udfs.reliability import cluster_mtbf_h, expected_interruptions, gpu_mtbf_h

test_from_sql, test_sql_agrees_with_python = contract.tests_for(reliability)


def test_no_failures_means_unbounded_mtbf(con: duckdb.DuckDBPyConnection) -> None:
    assert gpu_mtbf_h(0, 8, 100) == math.inf
    assert con.sql("SELECT gpu_mtbf_h(0, 8, 100)").fetchall() == [(math.inf,)]
    assert cluster_mtbf_h(math.inf, 8) == math.inf


@given(st.floats(1, 1e4), st.integers(1, 100_000), st.floats(1, 1e5))
def test_interruptions_invert_mtbf(failures: float, gpus: int, hours: float) -> None:
    mtbf = gpu_mtbf_h(failures, gpus, hours)
    assert expected_interruptions(gpus, hours, mtbf) == pytest.approx(failures)
    assert cluster_mtbf_h(mtbf, gpus) == pytest.approx(hours / failures)
