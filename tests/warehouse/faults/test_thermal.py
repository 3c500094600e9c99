"""Thermal residuals persisting for days: read from the hourly tier after a fold, a GPU hotter
than its model at the same power for thermal_residual_days days in a row is node_risk's
evidence, each day derived once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.warehouse.faults.test_node_risk import DAY, T0, shipped
from tests.warehouses import Warehouses
from warehouse.faults import signals, thermal
from warehouse.health import risk
from warehouse.ingest import ingest
from warehouse.tsdb import tiers


def hourly_text(folder: Path, days: int, hot_from_day: int) -> str:
    """9 GPUs of one model sampled every hour for `days` days and one hour more: temperature
    a line in power plus noise; gpu 3 of h1 10 °C hotter from `hot_from_day`."""
    rng = np.random.default_rng(0)
    lines: dict[str, list[str]] = {"DCGM_FI_DEV_GPU_TEMP": [], "DCGM_FI_DEV_POWER_USAGE": []}
    for hour in range(days * 24 + 1):
        at_ms = (T0 + hour * 3600) * 1000
        for host, gpu in [("h0", g) for g in range(8)] + [("h1", 3)]:
            power = float(rng.uniform(100, 700))
            temp = 30 + 0.05 * power + float(rng.normal(0, 1))
            if (host, gpu) == ("h1", 3) and hour >= hot_from_day * 24:
                temp += 10
            labels = f'{{gpu="{gpu}",UUID="GPU-{host}-{gpu}",Hostname="{host}",modelName="H100"}}'
            lines["DCGM_FI_DEV_GPU_TEMP"].append(f"DCGM_FI_DEV_GPU_TEMP{labels} {temp:.3f} {at_ms}")
            lines["DCGM_FI_DEV_POWER_USAGE"].append(
                f"DCGM_FI_DEV_POWER_USAGE{labels} {power:.3f} {at_ms}"
            )
    path = folder / "hourly.prom"
    path.write_text("".join(f"# TYPE {m} gauge\n" + "\n".join(v) + "\n" for m, v in lines.items()))
    return str(path)


def test_a_gpu_hot_for_days_is_evidence_once_a_day(warehouses: Warehouses, tmp_path: Path) -> None:
    with shipped(warehouses) as eng:
        ingest(eng, "dcgm", [hourly_text(tmp_path, days=6, hot_from_day=2)])
        cur = eng.cursor()
        tiers.fold(cur)
        added = thermal.derive(cur)
        again = thermal.derive(cur)  # each whole day once
        found = cur.execute(
            "SELECT node, gpu, epoch(signal_at), detail FROM node_signals "
            "WHERE kind = 'thermal_residual' ORDER BY signal_at"
        ).fetchall()
        risk.refresh(cur)
        [(precursor, precursors)] = cur.execute(
            "SELECT precursor, precursors FROM node_risk WHERE node = 'h1'"
        ).fetchall()
        kept = signals.rebuild(cur)  # derived again, the same evidence
        rebuilt = cur.execute(
            "SELECT node, gpu, epoch(signal_at), detail FROM node_signals ORDER BY signal_at"
        ).fetchall()
        cur.close()
    # hot on days 2, 3, 4, 5 (day 6 is not whole): runs of 3 end on days 4 and 5
    assert (added, again) == (2, 0)
    assert [(n, g, t) for n, g, t, _ in found] == [("h1", 3, T0 + 5 * DAY), ("h1", 3, T0 + 6 * DAY)]
    assert all("each of the last 3 days" in detail for *_, detail in found)
    assert float(found[0][3].split(" ")[0]) > 8  # about 10 °C above its power's prediction
    assert precursors == 2
    # 0.5 per day, halved every 2 days: the newest at age 0 and the one before at a day
    assert abs(precursor - 0.5 * (1 + 0.5**0.5)) < 1e-9
    assert kept == 2 and rebuilt == found
