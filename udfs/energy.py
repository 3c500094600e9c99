"""Power, energy, cost and carbon of GPU fleets and the buildings around them."""

from __future__ import annotations

from udfs.expr import Num
from udfs.model import model
from udfs.params import at_least, fraction, integer, non_negative, positive

#: Share of the board limit (TDP) a GPU draws under sustained full load. Real captures: an H100
#: SXM (700 W limit) under gpu-burn draws 627.4 W = 0.896 (shared/data nvidia-smi capture,
#: utkuozdemir/nvidia_gpu_exporter); power capping keeps boards just below their limit.
FULL_LOAD_SHARE_OF_TDP = 0.9
HOURS_PER_YEAR = 8760

watts = non_negative("W")
megawatts = non_negative("MW")
pue_value = at_least(1, "ratio")


@model("DOUBLE", "MW", example=(10000, 400), gpus=integer(0, units="GPUs"), watts_per_gpu=watts)
def gpu_power_mw(gpus: Num, watts_per_gpu: Num) -> Num:
    """Power drawn by `gpus` GPUs at `watts_per_gpu` each.

    Formula:
        gpus × watts_per_gpu / 1e6.

    Units:
        megawatts.

    Source:
        SI units; 10,000 A100 at their 400 W board limit draw 4 MW (NVIDIA A100 datasheet).

    Example:
        >>> gpu_power_mw(10000, 400)
        4.0
    """
    return gpus * watts_per_gpu / 1e6


@model(
    "DOUBLE",
    "W",
    example=(700, 0.5, 70),
    tdp_w=positive("W"),
    utilization=fraction("fraction, 0-1"),
    idle_w=watts,
)
def gpu_power_w(tdp_w: Num, utilization: Num, idle_w: Num) -> Num:
    """Power of one GPU at a utilization, linear between idle and full load.

    Formula:
        idle_w + (0.9 × tdp_w − idle_w) × utilization, utilization in [0, 1]; real boards under
        full load draw about 0.9 of their limit.

    Units:
        watts.

    Source:
        the linear utilization-to-power model of Fan, Weber and Barroso, "Power Provisioning for
        a Warehouse-sized Computer", ISCA 2007; full-load share from the H100 nvidia-smi capture
        under gpu-burn (627.4 W of 700 W).

    Example:
        >>> gpu_power_w(700, 1.0, 70), gpu_power_w(700, 0.0, 70)
        (630.0, 70.0)
    """
    return idle_w + (FULL_LOAD_SHARE_OF_TDP * tdp_w - idle_w) * utilization


@model(
    "DOUBLE",
    "ratio",
    example=(0.3,),
    cooling_share=fraction("share of total facility power", open_high=True),
)
def pue_from_cooling_share(cooling_share: Num) -> Num:
    """PUE of a facility whose only overhead is cooling taking `cooling_share` of the total.

    Formula:
        total / IT = 1 / (1 − cooling_share): 0.3 → 1.43, 0.4 → 1.67.

    Units:
        ratio ≥ 1.

    Source:
        The Green Grid, White Paper #49, "PUE: A Comprehensive Examination of the Metric"
        (2012): PUE = total facility energy / IT equipment energy.

    Example:
        >>> round(pue_from_cooling_share(0.3), 2), round(pue_from_cooling_share(0.4), 2)
        (1.43, 1.67)
    """
    return 1 / (1 - cooling_share)


@model("DOUBLE", "MW", example=(4, 1.5), it_power_mw=megawatts, pue=pue_value)
def facility_power_mw(it_power_mw: Num, pue: Num) -> Num:
    """Facility power for an IT load at a given PUE.

    Formula:
        it_power_mw × pue.

    Units:
        megawatts.

    Source:
        The Green Grid, White Paper #49 (2012), definition of PUE.

    Example:
        >>> facility_power_mw(4, 1.5)
        6.0
    """
    return it_power_mw * pue


@model("DOUBLE", "kWh", example=(700, 3600), power_w=watts, seconds=non_negative("s"))
def energy_kwh(power_w: Num, seconds: Num) -> Num:
    """Energy of a constant power over a duration.

    Formula:
        power_w × seconds / 3.6e6 (1 kWh = 3.6 MJ).

    Units:
        kilowatt-hours.

    Source:
        SI (BIPM SI Brochure, 9th edition, table 8: 1 kWh = 3.6 MJ).

    Example:
        >>> energy_kwh(700, 3600)
        0.7
    """
    return power_w * seconds / 3.6e6


@model(
    "DOUBLE",
    "currency per year",
    example=(9, 0.6),
    power_mw=megawatts,
    price_per_kwh=non_negative("currency per kWh"),
)
def annual_energy_cost(power_mw: Num, price_per_kwh: Num) -> Num:
    """Cost of drawing `power_mw` for a year (8,760 h) at a flat tariff.

    Formula:
        power_mw × 1000 × 8760 × price_per_kwh: 9 MW at 0.6/kWh = 47.3 million.

    Units:
        the currency of the tariff, per year.

    Source:
        SI; 8,760 hours in a 365-day year.

    Example:
        >>> round(annual_energy_cost(9, 0.6) / 1e6, 1)
        47.3
    """
    return power_mw * 1000 * HOURS_PER_YEAR * price_per_kwh


@model(
    "DOUBLE",
    "kg CO2e",
    example=(1000, 400),
    kwh=non_negative("kWh"),
    grid_g_per_kwh=non_negative("g CO2e per kWh"),
)
def carbon_kg(kwh: Num, grid_g_per_kwh: Num) -> Num:
    """Emissions of an amount of electricity at a grid carbon intensity.

    Formula:
        kwh × grid_g_per_kwh / 1000.

    Units:
        kilograms of CO2 equivalent.

    Source:
        GHG Protocol Scope 2 Guidance (2015), location-based method.

    Example:
        >>> carbon_kg(1000, 400)
        400.0
    """
    return kwh * grid_g_per_kwh / 1000


@model(
    "DOUBLE", "TFLOPS/W", example=(989.4, 700), tflops=non_negative("TFLOPS"), watts=positive("W")
)
def perf_per_watt(tflops: Num, watts: Num) -> Num:
    """Compute per watt: TFLOPS divided by board power.

    Formula:
        tflops / watts.

    Units:
        TFLOPS per watt (equivalently TFLOP per joule).

    Source:
        the Green500 metric (FLOPS per watt; top500.org/lists/green500).

    Example:
        >>> round(perf_per_watt(989.4, 700), 3)
        1.413
    """
    return tflops / watts
