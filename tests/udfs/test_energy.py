"""Power, PUE, energy, cost and carbon: the design figures and the SQL contract."""

from __future__ import annotations

import pytest

from tests.udfs import contract
from udfs import energy
from udfs.energy import (
    annual_energy_cost,
    carbon_kg,
    energy_kwh,
    facility_power_mw,
    gpu_power_mw,
    gpu_power_w,
    perf_per_watt,
    pue_from_cooling_share,
)

test_from_sql, test_sql_agrees_with_python = contract.tests_for(energy)


def test_gpu_power_is_linear_from_idle_to_nine_tenths_of_tdp() -> None:
    assert gpu_power_w(700, 0.0, 70) == 70
    assert gpu_power_w(700, 1.0, 70) == pytest.approx(630)
    assert gpu_power_w(700, 0.5, 70) == pytest.approx(350)


def test_h100_capture_under_load_is_nine_tenths_of_tdp() -> None:
    """nvidia-smi under gpu-burn: 627.40 W on a 700 W H100 (shared/data capture)."""
    assert gpu_power_w(700, 1.0, 69.85) == pytest.approx(627.4, rel=0.01)


def test_pue_facility_energy_cost_carbon() -> None:
    assert pue_from_cooling_share(0.0) == 1.0
    assert facility_power_mw(4, 1.5) == 6.0
    assert energy_kwh(1000, 3600) == 1.0
    assert annual_energy_cost(1, 1.0) == 8_760_000
    assert carbon_kg(1000, 400) == 400
    assert perf_per_watt(312, 400) == pytest.approx(0.78)
    assert gpu_power_mw(0, 400) == 0


def test_cooling_share_of_one_is_out_of_domain() -> None:
    with pytest.raises(ValueError, match=r"cooling_share must be a number in \[0, 1\), got 1.0"):
        pue_from_cooling_share(1.0)
