"""PCIe, NICs, NVLink and fibre: published figures, edge cases, and the SQL contract."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.udfs import contract
from udfs import bandwidth
from udfs.bandwidth import (
    cross_site_efficiency,
    fiber_rtt_ms,
    nic_bottleneck,
    nic_effective_gbs,
    nic_gbs,
    node_nic_gbs,
    nvlink_gbs,
    pcie_gbs,
)

test_from_sql, test_sql_agrees_with_python = contract.tests_for(bandwidth)


@pytest.mark.parametrize(
    ("gen", "x16_gbs"),
    [(1, 4.0), (2, 8.0), (3, 15.754), (4, 31.508), (5, 63.015), (6, 121.0), (7, 242.0)],
)
def test_pcie_x16_per_generation(gen: int, x16_gbs: float) -> None:
    """8b/10b up to Gen2, 128b/130b for Gen3-5, the 242/256 FLIT from Gen6."""
    assert pcie_gbs(gen, 16) == pytest.approx(x16_gbs, abs=0.001)


def test_pcie_scales_with_lanes() -> None:
    assert pcie_gbs(4, 8) * 2 == pytest.approx(pcie_gbs(4, 16))
    assert pcie_gbs(3, 1) == pytest.approx(8 * 128 / 130 / 8)


def test_nic_behind_a_slow_slot_is_capped_by_pcie() -> None:
    assert nic_gbs(400) == 50.0
    assert nic_effective_gbs(400, 4, 16) == pytest.approx(31.51, abs=0.01)
    assert nic_bottleneck(400, 4, 16) == "pcie"
    assert nic_effective_gbs(400, 5, 16) == 50.0
    assert nic_bottleneck(400, 5, 16) == "nic"
    assert nic_bottleneck(25, 3, 8) == "nic"


def test_tie_between_nic_and_slot_blames_the_nic() -> None:
    line_rate = pcie_gbs(4, 16) * 8
    assert nic_bottleneck(line_rate, 4, 16) == "nic"


def test_node_nic_gbs_sums_capped_nics() -> None:
    assert node_nic_gbs(8, 400, 5, 16) == 400.0
    assert node_nic_gbs(8, 400, 4, 16) == pytest.approx(8 * 31.5077, abs=0.01)
    assert node_nic_gbs(0, 400, 5, 16) == 0.0


def test_nvlink_a100_and_one_direction() -> None:
    assert nvlink_gbs(12, 25, True) == 600.0
    assert nvlink_gbs(12, 25, False) == 300.0
    assert nvlink_gbs(18, 25, True) == 900.0  # H100


def test_fiber_rtt() -> None:
    assert fiber_rtt_ms(1000) == pytest.approx(9.8)
    assert fiber_rtt_ms(0) == 0.0


def test_cross_site_efficiency_limits() -> None:
    assert cross_site_efficiency(1.0, 0, 1, 0) == 1.0
    # 1 s compute, 12.5 GB over 12.5 GB/s plus a 10 ms round trip
    assert cross_site_efficiency(1.0, 12.5e9, 12.5, 10) == pytest.approx(1 / 2.01)


@given(st.floats(0.001, 1e4), st.integers(1, 7), st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_effective_is_min_of_nic_and_slot(gbps: float, gen: int, lanes: int) -> None:
    effective = nic_effective_gbs(gbps, gen, lanes)
    assert effective == min(nic_gbs(gbps), pcie_gbs(gen, lanes))
    assert (nic_bottleneck(gbps, gen, lanes) == "nic") == (nic_gbs(gbps) <= pcie_gbs(gen, lanes))


def test_sql_error_names_function_argument_and_value(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(
        duckdb.Error, match=r"pcie_gbs: lanes must be an integer from 1 to 32, got 0"
    ):
        con.sql("SELECT pcie_gbs(4, 0)").fetchall()
    with pytest.raises(
        duckdb.Error, match=r"nic_gbs: line_rate_gbps must be a number >= 0, got -1"
    ):
        con.sql("SELECT nic_gbs(-1)").fetchall()
