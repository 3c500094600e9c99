"""sql/health/nccl_findings.sql: on simulated nccl-tests probes (warehouse/simulate/nccl.py) the
hosts with a bad NIC are flagged in every sweep from the first at or after the onset and no
other host is (hosts of Gen4 slots and 4-NIC clusters included); the threshold is the
`nccl_busbw` row of wanka.health_rules; a fault is pinned on a host only when the runs say so."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.kernel.arrow_tables import insert_arrow
from warehouse.kernel.catalog import sql_dir
from warehouse.simulate import SimConfig
from warehouse.simulate.inventory import Inventory, build_inventory, nodes_table
from warehouse.simulate.nccl import PLACEMENTS, probe_results

QUERY = (sql_dir() / "health" / "nccl_findings.sql").read_text(encoding="utf-8")
EVERY_S = 900.0
DETAIL = re.compile(
    r"all_reduce 16 ranks 4 GiB: \d+\.\d GB/s vs fleet median \d+\.\d GB/s \(0\.\d\dx\) with (\S+)"
)

BadNic = tuple[int, float, float]


@pytest.fixture(scope="module")
def cur(warehouses: Warehouses) -> Iterator[Any]:
    with warehouses.engine() as eng:
        cursor = eng.cursor()
        yield cursor
        cursor.close()


def set_rule(cur: Any, threshold: float | None) -> None:
    """The nccl_busbw rule with this threshold (None: no such rule)."""
    cur.execute("DELETE FROM wanka.health_rules WHERE rule = 'nccl_busbw'")
    if threshold is not None:
        cur.execute(
            "INSERT INTO wanka.health_rules VALUES ('nccl_busbw', 'drain', ?, 86400, "
            "'nccl-tests busbw this fraction below the fleet median')",
            [threshold],
        )


def load(cur: Any, nodes: pa.Table | None, results: pa.Table) -> None:
    cur.execute("DELETE FROM nodes")
    cur.execute("DELETE FROM nccl_results")
    if nodes is not None:
        insert_arrow(cur, "nodes", nodes)
    insert_arrow(cur, "nccl_results", results)


def findings(cur: Any) -> list[dict[str, Any]]:
    result = cur.execute(QUERY)
    names = [d[0] for d in result.description]
    return [dict(zip(names, row, strict=True)) for row in result.fetchall()]


def bad_hosts(inv: Inventory, window_s: float, rng: np.random.Generator) -> list[BadNic]:
    """One bad NIC in each of 3 clusters that have at least 3 hosts up, at different onsets."""
    up = inv.host_state != "down"
    clusters = [c for c in range(len(inv.plans)) if ((inv.host_cluster == c) & up).sum() >= 3]
    chosen = rng.choice(clusters, 3, replace=False)
    onsets = rng.choice(np.arange(0.0, window_s, 60.0), 3, replace=False)
    return [
        (int(rng.choice(np.flatnonzero((inv.host_cluster == c) & up))), float(onset),
         float(rng.uniform(0.55, 0.65)))
        for c, onset in zip(chosen, onsets, strict=True)
    ]  # fmt: skip


def expected(cfg: SimConfig, inv: Inventory, bad: list[BadNic]) -> set[tuple[str, datetime]]:
    """(host, sweep) of every sweep at or after each bad NIC's onset."""
    sweeps = EVERY_S * np.arange(int(np.ceil(cfg.window_s / EVERY_S)))
    return {(inv.host_names[host], cfg.start + timedelta(seconds=float(t)))
            for host, onset, _ in bad for t in sweeps if t >= onset}  # fmt: skip


def test_a_day_of_probes_finds_the_three_bad_nics_and_nothing_else(cur: Any) -> None:
    cfg = SimConfig(gpus=8 * 128, hours=24.0, seed=3)
    rng = np.random.default_rng(3)
    inv = build_inventory(cfg, rng)
    bad = bad_hosts(inv, cfg.window_s, rng)
    assert ((inv.pcie_gen == 4) & (inv.host_state != "down")).sum() >= 4  # Gen4 slots take part
    load(cur, nodes_table(inv), probe_results(cfg, inv, bad, rng, every_s=EVERY_S))
    set_rule(cur, 0.25)
    found = findings(cur)
    assert {(f["host"], f["ran_at"]) for f in found} == expected(cfg, inv, bad)
    factor = {inv.host_names[host]: f for host, _, f in bad}
    for f in found:
        assert f["runs"] == f["low_runs"] == 2
        assert f["ratio"] == pytest.approx(factor[f["host"]], abs=0.05)
        assert f["ratio"] == pytest.approx(f["busbw_gbs"] / f["baseline_gbs"], abs=1e-3)
        assert 1 <= len(f["evidence"]) <= 5
        partners = set()
        for e in f["evidence"]:
            assert (e["ts"], e["kind"], e["code"]) == (f["ran_at"], "nccl_busbw", None)
            match = DETAIL.fullmatch(e["detail"])
            assert match, e["detail"]
            partners.add(match.group(1))
        assert len(partners) == 2 and f["host"] not in partners


@settings(max_examples=examples(0.08), deadline=None)
@given(seed=st.integers(0, 2**31 - 1), hosts=st.integers(64, 256))
def test_precision_and_recall_are_one_whatever_the_fleet(cur: Any, seed: int, hosts: int) -> None:
    cfg = SimConfig(gpus=8 * hosts, hours=6.0, seed=seed)
    rng = np.random.default_rng(seed)
    inv = build_inventory(cfg, rng)
    bad = bad_hosts(inv, cfg.window_s, rng)
    load(cur, nodes_table(inv), probe_results(cfg, inv, bad, rng, every_s=EVERY_S))
    set_rule(cur, 0.25)
    assert {(f["host"], f["ran_at"]) for f in findings(cur)} == expected(cfg, inv, bad)


def test_the_threshold_is_the_rules(cur: Any) -> None:
    cfg = SimConfig(gpus=8 * 64, hours=2.0, seed=1)
    rng = np.random.default_rng(1)
    inv = build_inventory(cfg, rng)
    bad = [(h, 0.0, 0.6) for h, _, _ in bad_hosts(inv, cfg.window_s, rng)]
    load(cur, nodes_table(inv), probe_results(cfg, inv, bad, rng, every_s=EVERY_S))
    set_rule(cur, 0.25)
    assert len(findings(cur)) == 3 * 8
    set_rule(cur, 0.5)  # 40 % slower is not 50 % slower
    assert findings(cur) == []
    set_rule(cur, None)
    assert findings(cur) == []
    set_rule(cur, 0.25)


def runs(at: datetime, pairs: list[tuple[str, str]], bad: set[str]) -> list[dict[str, Any]]:
    """4 GiB rows of 2-host runs: 400 GB/s, 240 where a bad host takes part."""
    return [
        {"run_id": f"r-{at:%H%M}-{a}-{b}-{k}", "collective": "all_reduce", "ranks": 16,
         "hosts": [a, b], "gpu_model": "H100", "size_bytes": 4 * 2**30, "placement": placement,
         "busbw_gbs": 240.0 if {a, b} & bad else 400.0, "ran_at": at}
        for k, (a, b) in enumerate(pairs) for placement in PLACEMENTS
    ]  # fmt: skip


def test_a_fault_is_pinned_on_a_host_only_when_its_runs_say_so(cur: Any) -> None:
    """Sweep 1: n03 and n05 bad, n04 between them has two low runs but no partner that ran fine:
    not flagged. Sweep 2: n03 and n04 bad side by side: both flagged, each through its other
    partner. Sweep 3: n11 bad in its only run, n13 bad in two runs with the same partner: not
    flagged (it could be the partner's fault). None of these hosts is in `nodes`."""
    t0 = datetime.fromisoformat("2026-11-01T00:00:00+00:00")
    ring = [f"n{i:02d}" for i in range(1, 11)]
    pairs = list(zip(ring, ring[1:] + ring[:1], strict=True))
    sweeps = [t0 + timedelta(minutes=15 * k) for k in range(3)]
    rows = runs(sweeps[0], pairs, {"n03", "n05"}) + runs(sweeps[1], pairs, {"n03", "n04"})
    rows += runs(sweeps[2], [*pairs, ("n11", "n12"), ("n13", "n14"), ("n14", "n13")],
                 {"n11", "n13"})  # fmt: skip
    load(cur, None, pa.Table.from_pylist(rows))
    set_rule(cur, 0.25)
    found = findings(cur)
    assert [(f["host"], f["ran_at"]) for f in found] == [
        ("n03", sweeps[0]), ("n05", sweeps[0]), ("n03", sweeps[1]), ("n04", sweeps[1])]  # fmt: skip
    assert {(f["runs"], f["low_runs"], f["busbw_gbs"], f["baseline_gbs"], f["ratio"])
            for f in found} == {(2, 2, 240.0, 400.0, 0.6)}  # fmt: skip
    assert sorted(e["detail"] for e in found[0]["evidence"]) == [
        "all_reduce 16 ranks 4 GiB: 240.0 GB/s vs fleet median 400.0 GB/s (0.60x) with n02",
        "all_reduce 16 ranks 4 GiB: 240.0 GB/s vs fleet median 400.0 GB/s (0.60x) with n04",
    ]
