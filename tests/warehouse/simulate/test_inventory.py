"""The fleet: sites → clusters → racks → hosts, shaped like the DDL and like a real fleet."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from warehouse.jobs import hostlist
from warehouse.simulate import SimConfig, SimulatedCluster
from warehouse.simulate.inventory import (
    CLUSTERS,
    build_inventory,
    load_gpu_specs,
    nodes_table,
)
from warehouse.simulate.tables import ddl_schema


def test_tables_have_the_ddl_schema(small: SimulatedCluster) -> None:
    for name, table in small.tables().items():
        assert table.schema.equals(ddl_schema(name)), name


def test_ten_thousand_gpus_are_1250_hosts_of_eight() -> None:
    inv = build_inventory(SimConfig(gpus=10_000), np.random.default_rng(0))
    nodes = nodes_table(inv)
    assert nodes.num_rows == 1_250
    assert set(nodes["gpus"].to_pylist()) == {8}
    assert len(set(nodes["host"].to_pylist())) == 1_250


def test_hosts_are_numbered_so_each_cluster_compresses_to_one_range(
    small: SimulatedCluster,
) -> None:
    nodes = small.nodes.to_pylist()
    for cluster in {n["cluster"] for n in nodes}:
        hosts = [n["host"] for n in nodes if n["cluster"] == cluster]
        assert all(re.fullmatch(r"[a-z0-9]*?[a-z]\d{4}", h) for h in hosts)
        assert "," not in hostlist.compress(hosts)


def test_racks_hold_four_hosts_of_one_cluster(small: SimulatedCluster) -> None:
    racks = Counter(small.nodes["rack"].to_pylist())
    assert max(racks.values()) == 4
    for row in small.nodes.to_pylist():
        assert row["rack"].startswith(row["cluster"] + "-r")


def test_models_sites_and_schedulers_are_mixed(small: SimulatedCluster) -> None:
    specs = load_gpu_specs()
    clusters = small.clusters.to_pylist()
    assert {c["gpu_model"] for c in clusters} <= set(specs)
    assert len({c["gpu_model"] for c in clusters}) >= 5
    assert [c["scheduler"] for c in clusters].count("kubernetes") == 1
    assert {c["fabric"] for c in clusters} == {"infiniband", "roce"}
    assert sum(c["gpus"] for c in clusters) == small.nodes.num_rows * 8
    sites = small.sites.to_pylist()
    assert len(sites) == 3
    for site in sites:
        assert all(v is not None for k, v in site.items() if k != "batch_id")
        assert 1.0 < site["pue"] < 2.0 and -90 <= site["latitude"] <= 90


def test_the_400g_nic_in_a_gen4_slot_exists_beside_gen5_hosts() -> None:
    inv = build_inventory(SimConfig(gpus=10_000), np.random.default_rng(0))
    nodes = nodes_table(inv).to_pylist()
    cx7_gen4 = [n for n in nodes if n["nic_model"] == "ConnectX-7" and n["pcie_gen"] == 4]
    cx7_gen5 = [n for n in nodes if n["nic_model"] == "ConnectX-7" and n["pcie_gen"] == 5]
    assert 20 <= len(cx7_gen4) < len(cx7_gen5)
    assert {n["nic_count"] for n in nodes} <= {4, 8}
    assert {n["storage_nic_gbps"] for n in nodes} <= {25.0, 100.0, 200.0}
    assert {n["bond_mode"] for n in nodes} == {"none", "802.3ad", "balance-rr"}
    assert all(n["bond_mode"] == "none" for n in nodes if n["storage_nic_count"] == 1)
    states = Counter(n["state"] for n in nodes)
    assert states["up"] > 0.95 * len(nodes) and states["drain"] > 0 and states["down"] > 0


def test_every_cluster_keeps_a_host_up_even_at_eight_gpus() -> None:
    for seed in range(20):
        inv = build_inventory(SimConfig(gpus=8, seed=seed), np.random.default_rng(seed))
        assert list(inv.host_state) == ["up"]


def test_cluster_shares_add_up() -> None:
    assert sum(p.share for p in CLUSTERS) == pytest.approx(1.0)
