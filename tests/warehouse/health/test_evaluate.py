"""`wanka health` against faults whose truth is known (warehouse/health/evaluate.py): on simulated
clusters with injected faults every kind is found within 5 windows of its start with no false
positives, and on the same cluster without faults (almost) nothing is flagged. Each run prints
its per-kind and confusion tables (`pytest -s` shows them); bench/bench_health.py runs the same
at 10,000 GPUs for a day."""

from __future__ import annotations

from pathlib import Path

import pytest

from warehouse.health import evaluate
from warehouse.health import findings as health
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster
from warehouse.simulate.faults import KINDS


def scored(db: Path, cfg: SimConfig) -> evaluate.Score:
    """Load the simulation of `cfg` into the new warehouse `db` and score its findings."""
    cluster = simulate_cluster(cfg)
    with Engine(str(db)) as engine:
        evaluate.load(engine, cluster)
        cur = engine.cursor()
        findings = health.findings(cur)
        cur.close()
    result = evaluate.score(
        findings, evaluate.truth(cluster), cluster.telemetry.columns, interval_s=cfg.interval_s
    )
    print(f"\n{cfg.gpus} GPUs x {cfg.hours} h, seed {cfg.seed}, {cfg.faults} faults per kind")
    print(evaluate.render(result))
    return result


def config(seed: int, faults: int) -> SimConfig:
    return SimConfig(
        gpus=512, hours=6.0, seed=seed, faults=faults, warmup_hours=12.0,
        fatal_xid_per_gpu_h=0.0, nccl_probe_s=900.0,
    )  # fmt: skip


@pytest.mark.parametrize("seed", [1, 2])
def test_every_injected_fault_is_found_in_time_and_nothing_else(fresh_db: Path, seed: int) -> None:
    result = scored(fresh_db, config(seed, faults=3))
    table = evaluate.render(result)
    for kind in KINDS:
        k = result.kind(kind)
        assert k.faults == 3, table
        assert (k.precision, k.recall) == (1.0, 1.0), table
        assert max(k.delays_windows) <= 5, table
    assert result.healthy_flagged == 0, table
    assert all(result.confusion[kind].get(kind) == 3 for kind in KINDS), table
    # lead time against the failure itself (the XID that ends a climb), not its first symptom:
    # each climb lasts 1-3 h and is flagged within 5 windows of its start
    leads = result.kind("ecc_climb").leads_min
    assert len(leads) == 3 and all(30 <= lead <= 180 for lead in leads), table
    assert "lead to failure, min" in table


def test_a_run_without_faults_flags_under_one_percent(fresh_db: Path) -> None:
    result = scored(fresh_db, config(1, faults=0))
    assert all(k.faults == 0 for k in result.kinds)
    assert result.healthy_flagged / result.gpus < 0.01, evaluate.render(result)
