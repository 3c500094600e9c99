"""The figures of the documents wanka was designed from, reproduced in Python and in SQL.

Each case is a query over model functions with the range the source states; the same
expression is evaluated by the pure Python functions (the SQL text is Python too: the
functions' names are the same, `inf` stands for 'inf'::DOUBLE).
"""

from __future__ import annotations

import math
from typing import Any

import duckdb
import pytest

from tests.warehouses import Warehouses
from udfs.registry import REGISTRY

#: (what the source says, expression, low, high)
FIGURES = [
    ("10,000 A100 at 400 W draw 4 MW", "gpu_power_mw(10000, 400)", 4.0, 4.0),
    ("cooling 30 % of total power: PUE 1.43", "pue_from_cooling_share(0.3)", 1.425, 1.435),
    ("cooling 40 % of total power: PUE 1.67", "pue_from_cooling_share(0.4)", 1.665, 1.675),
    ("8 MW at 0.5 per kWh: tens of millions a year", "annual_energy_cost(8, 0.5)", 1e7, 1e8),
    ("10 MW at 0.8 per kWh: tens of millions a year", "annual_energy_cost(10, 0.8)", 1e7, 1e8),
    ("9 MW at 0.6 per kWh = 47.3 million", "annual_energy_cost(9, 0.6)", 47.3e6, 47.31e6),
    ("A100 NVLink: 12 links × 25 GB/s = 600 GB/s", "nvlink_gbs(12, 25, true)", 600, 600),
    ("PCIe Gen4 x16 ≈ 32 GB/s", "pcie_gbs(4, 16)", 31.5, 32.0),
    ("400 Gb/s NIC in a Gen4 x16 slot: ≈31.5 GB/s", "nic_effective_gbs(400, 4, 16)", 31.5, 31.52),
    ("… and PCIe is the bottleneck", "nic_bottleneck(400, 4, 16) = 'pcie'", True, True),
    ("7B model, bf16 + Adam: 98 GB of state", "checkpoint_bytes(7e9, 'bf16', 'adam')", 98e9, 98e9),
    (
        "98 GB through one 25 Gb/s storage NIC ≈ 31 s",
        "checkpoint_write_s(98e9, 1, link_write_gbs(25, 1, 'none', 1), inf)",
        30.5,
        31.5,
    ),
    (
        "two-NIC LACP bond with two flows ≈ 16 s",
        "checkpoint_write_s(98e9, 1, link_write_gbs(25, 2, '802.3ad', 2), inf)",
        15.5,
        16.0,
    ),
    (
        "… but one flow still ≈ 31 s",
        "checkpoint_write_s(98e9, 1, link_write_gbs(25, 2, '802.3ad', 1), inf)",
        30.5,
        31.5,
    ),
    (
        "GPT-4: 2.15e25 FLOPs on 25,000 A100 at 36 % MFU ≈ 89 days",
        "training_days(2.15e25, 25000, 312, 0.36)",
        88.5,
        89.5,
    ),
    ("… at 32 % MFU ≈ 100 days", "training_days(2.15e25, 25000, 312, 0.32)", 99.0, 100.0),
    ("… 90-100 days implies 32-36 % MFU", "implied_mfu(2.15e25, 25000, 312, 95)", 0.32, 0.36),
    ("1,000 km of fibre adds ≈ 9.8 ms round trip", "fiber_rtt_ms(1000)", 9.79, 9.81),
    (
        "all_reduce_perf on 16 H100: algbw 180.71 GB/s → busbw 338.8 GB/s",
        "180.71 * busbw_factor('all_reduce', 16)",
        338.8,
        338.85,
    ),
    (
        "… the same from the row's size and time",
        "busbw_gbs('all_reduce', 16, 8589934592, 47535e-6)",
        338.8,
        338.85,
    ),
    (
        "Llama 3: 419 interruptions in 54 days on 16,384 GPUs, one every ≈3 hours",
        "cluster_mtbf_h(gpu_mtbf_h(419, 16384, 54 * 24), 16384)",
        3.0,
        3.2,
    ),
]

_PYTHON_NAMES: dict[str, Any] = {m.name: m for m in REGISTRY} | {"inf": math.inf, "true": True}


def _python(expression: str) -> Any:
    return eval(expression.replace(" = ", " == "), {"__builtins__": {}}, _PYTHON_NAMES)


def _sql(con: duckdb.DuckDBPyConnection, expression: str) -> Any:
    text = expression.replace("inf)", "'inf'::DOUBLE)")
    return con.sql(f"SELECT {text}").fetchall()[0][0]


@pytest.mark.parametrize(
    ("claim", "expression", "low", "high"), FIGURES, ids=[f[0] for f in FIGURES]
)
def test_figure_in_python(claim: str, expression: str, low: Any, high: Any) -> None:
    value = _python(expression)
    assert low <= value <= high, f"{claim}: {value}"


@pytest.mark.parametrize(
    ("claim", "expression", "low", "high"), FIGURES, ids=[f[0] for f in FIGURES]
)
def test_figure_in_sql(
    con: duckdb.DuckDBPyConnection, claim: str, expression: str, low: Any, high: Any
) -> None:
    value = _sql(con, expression)
    assert low <= value <= high, f"{claim}: {value}"
    assert value == pytest.approx(_python(expression))


def test_figures_from_the_reference_tables(warehouses: Warehouses) -> None:
    """The same figures with the specs read from gpu_models and nic_models."""
    with warehouses.engine() as engine:
        cur = engine.cursor()
        a100 = cur.sql(
            "SELECT gpu_power_mw(10000, tdp_w), scaleup_gbs = nvlink_gbs(12, 25, true), "
            "pcie_gbs(pcie_gen, pcie_lanes) FROM gpu_models WHERE model = 'A100'"
        ).fetchall()[0]
        cx7 = cur.sql(
            "SELECT nic_effective_gbs(line_rate_gbps, 4, pcie_lanes), "
            "nic_bottleneck(line_rate_gbps, 4, pcie_lanes) "
            "FROM nic_models WHERE model = 'ConnectX-7'"
        ).fetchall()[0]
        cur.close()
    assert a100 == (4.0, True, pytest.approx(31.51, abs=0.01))
    assert cx7 == (pytest.approx(31.51, abs=0.01), "pcie")
