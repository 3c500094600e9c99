"""The simulated nccl-tests probes (warehouse/simulate/nccl.py): rows shaped like nccl_results,
a ring per cluster and sweep, figures like real 2-node all_reduce_perf runs, and bad NICs."""

from __future__ import annotations

import doctest
import re
from collections import Counter, defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.warehouses import Warehouses
from udfs.collectives import busbw_factor
from warehouse.kernel import arrow_tables
from warehouse.simulate import SimConfig, nccl
from warehouse.simulate.inventory import Inventory, build_inventory
from warehouse.simulate.nccl import BUSBW_FACTOR, SIZES, host_link_gbs, probe_results

#: 40 hosts in all eight clusters, 2 hours: 8 sweeps.
CFG = SimConfig(gpus=320, hours=2.0, start=datetime(2026, 11, 1, tzinfo=UTC), seed=5)
GIB = 2**30


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return build_inventory(CFG, np.random.default_rng(11))


@pytest.fixture(scope="module")
def probes(inv: Inventory) -> pa.Table:
    return probe_results(CFG, inv, [], np.random.default_rng(1))


def runs_of(table: pa.Table) -> dict[str, dict[str, Any]]:
    """run_id → the run's hosts, sweep time and model (each the same on all its rows)."""
    out: dict[str, dict[str, Any]] = {}
    for row in table.select(["run_id", "hosts", "ran_at", "gpu_model"]).to_pylist():
        seen = out.setdefault(row["run_id"], row)
        assert seen == row
    return out


def test_columns_are_nccl_results_as_the_schema_declares_them(
    warehouses: Warehouses, probes: pa.Table
) -> None:
    with warehouses.engine() as eng:
        declared = arrow_tables.table_schema(eng.con, "nccl_results")
        assert probes.schema.equals(declared)  # batch_id null, as the other simulated tables
        assert probes["batch_id"].null_count == probes.num_rows
        cur = eng.cursor()
        assert arrow_tables.insert_arrow(cur, "nccl_results", probes) == probes.num_rows
        cur.close()


def test_rows_read_like_all_reduce_perf(probes: pa.Table) -> None:
    rows = probes.to_pylist()
    assert {r["collective"] for r in rows} == {"all_reduce"}
    assert {(r["ranks"], r["dtype"], r["redop"], r["root"], r["wrong"]) for r in rows} == {
        (16, "float", "sum", None, 0)
    }
    assert [(r["size_bytes"], r["placement"]) for r in rows[:8]] == [
        (s, p) for s in SIZES.tolist() for p in ("out-of-place", "in-place")
    ]
    assert busbw_factor("all_reduce", 16) == BUSBW_FACTOR
    for r in rows:
        assert r["count"] == r["size_bytes"] // 4
        assert r["busbw_gbs"] == pytest.approx(r["algbw_gbs"] * BUSBW_FACTOR, abs=0.02)
        assert r["time_us"] == pytest.approx(r["size_bytes"] / r["algbw_gbs"] / 1e3, rel=2e-4)
        host, partner = r["hosts"]
        stamp = r["ran_at"].strftime("%Y-%m-%dT%H:%M:%SZ")
        assert r["run_id"] == f"probe-{stamp}-{host}-{partner}"
        assert r["ran_at"].tzinfo is not None and r["ran_at"].utcoffset() == timedelta(0)


def test_sweeps_every_15_minutes_of_the_window(probes: pa.Table) -> None:
    times = sorted(set(probes["ran_at"].to_pylist()))
    assert times == [CFG.start + timedelta(minutes=15 * k) for k in range(8)]
    assert probes["ran_at"].to_pylist() == sorted(probes["ran_at"].to_pylist())


def test_each_host_runs_twice_a_sweep_with_two_partners_of_its_cluster(
    inv: Inventory, probes: pa.Table
) -> None:
    index = {name: i for i, name in enumerate(inv.host_names)}
    partners: dict[tuple[object, str], list[str]] = defaultdict(list)
    for run in runs_of(probes).values():
        host, partner = run["hosts"]
        a, b = index[host], index[partner]
        assert a != b and inv.host_cluster[a] == inv.host_cluster[b]
        assert run["gpu_model"] == inv.plans[int(inv.host_cluster[a])].model
        partners[run["ran_at"], host].append(partner)
        partners[run["ran_at"], partner].append(host)
    up = Counter(int(c) for c, s in zip(inv.host_cluster, inv.host_state, strict=True)
                 if s != "down")  # fmt: skip
    assert max(up.values()) >= 3
    for (_, host), theirs in partners.items():
        two = up[int(inv.host_cluster[index[host]])] > 2
        assert len(set(theirs)) == len(theirs) == (2 if two else 1), host
    down = {inv.host_names[i] for i, s in enumerate(inv.host_state) if s == "down"}
    ran = {host for _, host in partners}
    assert ran.isdisjoint(down)
    assert len(ran) == sum(m for m in up.values() if m > 1)
    runs = sum(m if m > 2 else m // 2 for m in up.values())  # a cluster of 2: one run
    assert probes.num_rows == 8 * runs * 8  # sweeps × runs × rows per run


def test_a_cluster_of_two_hosts_runs_once_and_of_one_not_at_all(inv: Inventory) -> None:
    state = np.array(inv.host_state, dtype=object)
    first, second = (np.flatnonzero(inv.host_cluster == c) for c in (0, 1))
    state[first[:2]], state[first[2:]] = "up", "down"
    state[second[1:]] = "down"
    table = probe_results(CFG, replace(inv, host_state=state), [], np.random.default_rng(2))
    index = {name: i for i, name in enumerate(inv.host_names)}
    hosts = [run["hosts"] for run in runs_of(table).values()]
    by_cluster = Counter(int(inv.host_cluster[index[h[0]]]) for h in hosts)
    assert by_cluster[0] == 8  # one run in each of the 8 sweeps
    assert by_cluster[1] == 0


def test_the_same_rng_gives_the_same_rows(inv: Inventory, probes: pa.Table) -> None:
    assert probe_results(CFG, inv, [], np.random.default_rng(1)).equals(probes)
    other = probe_results(CFG, inv, [], np.random.default_rng(2))
    assert not other.equals(probes)
    assert other.num_rows == probes.num_rows


def test_busbw_is_near_the_hosts_network_and_rises_with_size(
    inv: Inventory, probes: pa.Table
) -> None:
    """At 4 GiB a run reaches ~93 % of its slower host's network (NICs capped by PCIe Gen4
    slots, and on H800 by NVLink); 64 MiB ~80 %; the noise is a percent or two."""
    link = host_link_gbs(inv)
    index = {name: i for i, name in enumerate(inv.host_names)}
    share: dict[int, list[float]] = defaultdict(list)
    for r in probes.select(["hosts", "size_bytes", "busbw_gbs"]).to_pylist():
        expected = min(link[index[h]] for h in r["hosts"])
        share[r["size_bytes"]].append(r["busbw_gbs"] / expected)
    medians = [float(np.median(share[s])) for s in SIZES.tolist()]
    assert medians == pytest.approx([0.80, 0.845, 0.89, 0.93], abs=0.005)
    assert float(np.std(share[4 * GIB])) == pytest.approx(0.015, abs=0.005)
    best = {p.name: float(link[np.flatnonzero(inv.host_cluster == c)].max())
            for c, p in enumerate(inv.plans)}  # fmt: skip
    assert best["ash-h100"] == best["ash-h200"] == best["pdx-b200"] == 400.0  # 8 × 400 Gb/s
    assert best["pdx-mi300x"] == 400.0
    assert best["ash-k8s"] == 200.0  # 4 × 400 Gb/s
    assert best["pdx-a100"] == 100.0  # 4 × 200 Gb/s
    assert best["ulq-910b"] == 200.0  # 8 × 200 Gb/s
    assert best["ulq-h800"] == pytest.approx(228.6, abs=0.1)  # NVLink 400 GB/s bidirectional
    big = build_inventory(SimConfig(gpus=1024), np.random.default_rng(0))
    h100 = big.host_cluster == 0  # ash-h100, whose leading racks have Gen4 NIC slots
    gen4 = host_link_gbs(big)[h100 & (big.pcie_gen == 4)]
    assert len(gen4) == 4 and gen4.tolist() == pytest.approx([8 * 0.9 * 31.51] * 4)


def test_a_bad_nic_slows_every_run_it_touches_from_its_onset(inv: Inventory) -> None:
    host = int(np.flatnonzero((inv.host_cluster == 1) & (inv.host_state != "down"))[0])
    name = inv.host_names[host]
    onset = 1900.0  # between the sweeps at 30 and 45 minutes
    bad = probe_results(CFG, inv, [(host, onset, 0.6)], np.random.default_rng(1))
    good = probe_results(CFG, inv, [], np.random.default_rng(1))
    ratio = np.array(bad["busbw_gbs"]) / np.array(good["busbw_gbs"])
    touched = np.array([name in hosts for hosts in bad["hosts"].to_pylist()])
    after = np.array([t >= CFG.start + timedelta(seconds=onset) for t in bad["ran_at"].to_pylist()])
    assert bad["run_id"].equals(good["run_id"])  # the same draws: only the factor differs
    assert ratio[touched & after] == pytest.approx(0.6, abs=0.002)
    assert ratio[~(touched & after)] == pytest.approx(1.0, abs=1e-4)
    assert (touched & after).sum() == 5 * 2 * 8  # 5 sweeps from 45 min, 2 runs, 8 rows


def test_window_without_hosts_to_pair_gives_no_rows() -> None:
    cfg = SimConfig(gpus=8, hours=1.0)
    table = probe_results(cfg, build_inventory(cfg, np.random.default_rng(0)), [],
                          np.random.default_rng(0))  # fmt: skip
    assert table.num_rows == 0 and "batch_id" in table.schema.names


@pytest.mark.parametrize(
    ("bad", "every_s", "message"),
    [
        ([(10_000, 0.0, 0.6)], 900.0, "not a host index"),
        ([(0, 0.0, 0.0)], 900.0, "factor must be in"),
        ([(0, 0.0, 1.5)], 900.0, "factor must be in"),
        ([], 0.5, "every_s must be at least 1 second"),
        ([], float("nan"), "every_s must be at least 1 second"),
    ],
)
def test_bad_arguments_are_refused(
    inv: Inventory, bad: list[tuple[int, float, float]], every_s: float, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        probe_results(CFG, inv, bad, np.random.default_rng(0), every_s=every_s)


def test_docstring_examples() -> None:
    result = doctest.testmod(nccl)
    assert result.attempted > 0 and result.failed == 0
