"""Checkpoint size, bandwidth, stall and interval models: published figures and the SQL contract."""

from __future__ import annotations

import math

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.udfs import contract
from udfs import checkpoint
from udfs.checkpoint import (
    checkpoint_bytes,
    checkpoint_bytes_per_param,
    checkpoint_stall_s,
    checkpoint_waste_fraction,
    checkpoint_write_s,
    daly_interval_s,
    link_write_gbs,
    young_interval_s,
)

test_from_sql, test_sql_agrees_with_python = contract.tests_for(checkpoint)


@pytest.mark.parametrize(
    ("precision", "optimizer", "size"),
    [
        ("bf16", "adam", 14),
        ("bf16", "adamw", 14),
        ("fp16", "adamw", 14),
        ("fp32", "adam", 12),
        ("bf16", "sgd", 10),
        ("fp32", "sgd", 8),
        ("bf16", "none", 2),
        ("fp32", "none", 4),
        ("BFloat16", "AdamW", 14),
    ],
)
def test_bytes_per_param(precision: str, optimizer: str, size: float) -> None:
    assert checkpoint_bytes_per_param(precision, optimizer) == size


def test_seven_billion_parameters_is_98_gb() -> None:
    assert checkpoint_bytes(7e9, "bf16", "adamw") == 98e9


@pytest.mark.parametrize(
    ("mode", "flows", "gbs"),
    [
        ("none", 4, 3.125),
        ("802.3ad", 1, 3.125),
        ("802.3ad", 2, 6.25),
        ("802.3ad", 8, 6.25),
        ("bond4", 2, 6.25),
        ("LACP", 2, 6.25),
        ("balance-rr", 1, 6.25),
        ("bond0", 1, 6.25),
        ("active-backup", 4, 3.125),
        ("balance-xor", 1, 3.125),
    ],
)
def test_bond_modes_per_linux_bonding_docs(mode: str, flows: int, gbs: float) -> None:
    """Two 25 Gb/s NICs: one flow never exceeds one NIC except under balance-rr."""
    assert link_write_gbs(25, 2, mode, flows) == gbs


def test_unknown_bond_mode_is_an_error(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(
        duckdb.Error, match=r"link_write_gbs: bond_mode must be one of .*got 'bond9'"
    ):
        con.sql("SELECT link_write_gbs(25, 2, 'bond9', 1)").fetchall()


def test_write_time_takes_the_slower_of_links_and_storage() -> None:
    assert checkpoint_write_s(98e9, 1, 3.125, math.inf) == pytest.approx(31.36)
    assert checkpoint_write_s(98e9, 100, 3.125, 50) == pytest.approx(98e9 / 50e9)


def test_inf_storage_from_sql(con: duckdb.DuckDBPyConnection) -> None:
    got = con.sql("SELECT checkpoint_write_s(98e9, 2, 3.125, 'inf'::DOUBLE)").fetchall()[0][0]
    assert got == pytest.approx(15.68)


def test_stall_is_one_shard_over_device_to_host() -> None:
    # 98 GB over 8 GPUs: 12.25 GB each at 25 GB/s
    assert checkpoint_stall_s(98e9, 8, 25) == pytest.approx(0.49)


def test_young_and_daly() -> None:
    assert young_interval_s(60, 86400) == pytest.approx(math.sqrt(2 * 60 * 86400))
    # Daly's estimate sits just below Young's minus δ corrections for δ << M
    young = young_interval_s(60, 86400)
    assert young - 60 < daly_interval_s(60, 86400) < young
    # δ >= 2M: checkpointing more often than failures cannot help; τ = M
    assert daly_interval_s(200, 100) == 100
    assert daly_interval_s(200, 100.0001) != 100.0001


@given(st.floats(1, 3600), st.floats(3600, 1e7))
def test_young_interval_minimises_first_order_waste(delta: float, mtbf: float) -> None:
    tau = young_interval_s(delta, mtbf)
    waste = checkpoint_waste_fraction(tau, delta, mtbf, 0)
    assert waste <= checkpoint_waste_fraction(tau * 1.2, delta, mtbf, 0) + 1e-12
    assert waste <= checkpoint_waste_fraction(tau / 1.2, delta, mtbf, 0) + 1e-12


def test_waste_fraction_terms() -> None:
    assert checkpoint_waste_fraction(3600, 60, 86400, 600) == pytest.approx(
        60 / 3600 + 3600 / 172800 + 600 / 86400
    )
