"""The honest fleet failure history: Llama 3's rate, failures mostly without warning, harmless
ECC bursts, lemon servers — drawn as configured, written in the real formats, read back."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tests.warehouses import Warehouses
from warehouse.analyses import run_analysis_table
from warehouse.ingest import ingest
from warehouse.simulate.config import InvalidConfig
from warehouse.simulate.failures import FleetConfig, draw_fleet, write_fleet

BIG = FleetConfig(gpus=10_000, days=120, seed=3)


def refault_share(config: FleetConfig) -> float:
    """P(another failure of the node within 7 days | a repaired failure), as measured."""
    fleet = draw_fleet(config)
    by_host: dict[int, list[float]] = {}
    for f in fleet.failures:
        by_host.setdefault(f.host, []).append(f.at_h)
    repaired = again = 0
    for f in fleet.failures:
        end = f.at_h + f.repair_h
        if end + 168 > config.days * 24:
            continue
        repaired += 1
        again += any(end < t <= end + 168 for t in by_host[f.host])
    return again / repaired


def test_the_fleet_fails_at_llama3s_rate_mostly_without_warning() -> None:
    fleet = draw_fleet(BIG)
    gpu_hours = BIG.gpus * BIG.days * 24
    assert gpu_hours / len(fleet.failures) == pytest.approx(50_700, rel=0.15)
    warned = [f for f in fleet.failures if f.precursor]
    assert len(warned) / len(fleet.failures) == pytest.approx(0.25, abs=0.06)
    assert all(not f.precursor for f in fleet.failures if f.xid in (79, 119))
    assert {f.xid for f in fleet.failures if not f.precursor} >= {79, 119}
    # every precursor comes before its failure, within its lead time
    for f in warned:
        mine = [e.at_h for e in fleet.events if (e.host, e.gpu) == (f.host, f.gpu)]
        assert any(f.at_h - f.lead_h <= t < f.at_h for t in mine), f
    assert fleet.bursts > 0


def test_lemon_servers_refault_within_a_week_as_configured() -> None:
    assert refault_share(BIG) == pytest.approx(0.30, abs=0.06)
    assert refault_share(FleetConfig(gpus=10_000, days=120, seed=3, refault_7d=0.0)) < 0.08


def test_the_same_config_gives_the_same_fleet() -> None:
    config = FleetConfig(gpus=800, days=20, seed=9)
    assert draw_fleet(config) == draw_fleet(config)
    assert draw_fleet(config) != draw_fleet(FleetConfig(gpus=800, days=20, seed=10))


@pytest.mark.parametrize(
    ("field", "value"), [("precursor_share", 1.5), ("refault_7d", 1.0), ("days", 0), ("gpus", 4)]
)
def test_bad_parameters_are_refused(field: str, value: float) -> None:
    with pytest.raises(InvalidConfig):
        FleetConfig(**{field: value})  # type: ignore[arg-type]


def test_written_in_real_formats_and_read_back(warehouses: Warehouses, tmp_path: Path) -> None:
    config = FleetConfig(gpus=4_000, days=90, seed=5)
    fleet = draw_fleet(config)
    paths = write_fleet(fleet, tmp_path)
    truth = list(csv.DictReader(paths["truth"].open()))
    assert len(truth) == len(fleet.failures)
    with warehouses.engine() as eng:
        [tickets] = ingest(eng, "faults", [str(paths["tickets"])])
        [events] = ingest(eng, "dcgm", [str(paths["events"])])
        assert tickets.rows == {"node_faults": len(fleet.failures)} and not events.rejected
        cur = eng.cursor()
        xids = dict(cur.execute(
            "SELECT code, count(*) FROM gpu_events WHERE kind = 'xid' GROUP BY code"
        ).fetchall())  # fmt: skip
        repeat = run_analysis_table(
            cur, "fault_repeat", {"fleet_nodes": str(config.hosts)}
        ).to_pylist()
        cur.close()
    failed = np.bincount([f.xid for f in fleet.failures], minlength=200)
    assert xids[79] == failed[79] and xids[119] == failed[119]
    assert xids[63] == sum(f.precursor for f in fleet.failures)  # one page retirement each
    fleet_row = next(r for r in repeat if r["class"] == "all")
    assert fleet_row["p_repeat_pct"] == pytest.approx(30, abs=8)
    assert fleet_row["p_fleet_pct"] < 5
