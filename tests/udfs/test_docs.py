"""The generated documentation and the reference-table queries it shows, run on a warehouse."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.warehouses import Warehouses
from udfs import docs
from udfs.registry import REGISTRY
from warehouse.kernel.engine import Engine

NODES = [
    # host, nic_model, nic_count, slot gen, slot lanes
    ("gpu001", "ConnectX-7", 8, 4, 16),  # a Gen5 card in a Gen4 slot: PCIe-bound
    ("gpu002", "ConnectX-7", 8, 5, 16),
    ("gpu003", "ConnectX-6", 8, 4, 16),
    ("gpu004", "25GbE", 2, 5, 16),  # a Gen3 x8 card: trains at Gen3 x8, still NIC-bound
    ("gpu005", "ConnectX-7", 8, None, None),  # slot unknown: the card's own link
]


@pytest.fixture(scope="module")
def engine(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as eng:
        with eng.transaction() as cur:
            cur.executemany(
                "INSERT INTO nodes (host, nic_model, nic_count, pcie_gen, pcie_lanes) "
                "VALUES (?, ?, ?, ?, ?)",
                NODES,
            )
        yield eng


def _run(engine: Engine, name: str) -> list[dict[str, Any]]:
    cur = engine.cursor()
    try:
        result = cur.execute(docs.REFERENCE_QUERIES[name][1])
        names = [d[0] for d in result.description]
        return [dict(zip(names, row, strict=True)) for row in result.fetchall()]
    finally:
        cur.close()


def test_nic_effective_bandwidth_and_bottleneck_per_host(engine: Engine) -> None:
    rows = {r["host"]: r for r in _run(engine, "nic_bottleneck_per_host")}
    assert set(rows) == {host for host, *_ in NODES}
    expected = {
        "gpu001": (31.51, "pcie", 8 * 31.51),
        "gpu002": (50.0, "nic", 400.0),
        "gpu003": (25.0, "nic", 200.0),
        "gpu004": (3.125, "nic", 6.25),
        "gpu005": (50.0, "nic", 400.0),
    }
    for host, (gbs, bottleneck, node_gbs) in expected.items():
        assert rows[host]["nic_gbs"] == pytest.approx(gbs, abs=0.01), host
        assert rows[host]["bottleneck"] == bottleneck, host
        assert rows[host]["node_gbs"] == pytest.approx(node_gbs, abs=0.1), host


def test_perf_per_watt_of_every_gpu_model(engine: Engine) -> None:
    rows = _run(engine, "gpu_perf_per_watt")
    cur = engine.cursor()
    models = cur.sql("SELECT count(*) FROM gpu_models").fetchall()[0][0]
    cur.close()
    assert len(rows) == models
    by_model = {r["model"]: r["tflops_per_w"] for r in rows}
    assert by_model["A100"] == pytest.approx(0.78)
    assert by_model["H100"] == pytest.approx(1.413)
    values = [r["tflops_per_w"] for r in rows]
    assert values == sorted(values, reverse=True)


def test_energy_bill_per_gpu_model(engine: Engine) -> None:
    rows = {r["model"]: r["million_per_year"] for r in _run(engine, "cluster_energy_bill")}
    # A100: 60 + (360 - 60) × 1 = 360 W; 3.6 MW of GPUs; PUE 1/0.65; 8,760 h at 0.6
    assert rows["A100"] == pytest.approx(3.6 / 0.65 * 8760 * 1000 * 0.6 / 1e6, abs=0.05)


def test_table_has_a_row_per_function_and_correct_examples() -> None:
    table = docs.table().splitlines()
    assert len(table) == 2 + len(REGISTRY)
    for model, row in zip(REGISTRY, table[2:], strict=True):
        assert row.startswith(f"| `{model.signature}` | {model.returns} |")
        assert (
            f"`SELECT {model.example_call}` → `{docs.format_value(model(*model.example))}`" in row
        )


def test_replace_section_keeps_everything_outside_the_markers() -> None:
    text = f"head\n{docs.BEGIN}\nold\n{docs.END}\ntail\n"
    assert docs.replace_section(text, "new") == f"head\n{docs.BEGIN}\nnew\n{docs.END}\ntail\n"
    with pytest.raises(ValueError, match="markers"):
        docs.replace_section("no markers", "new")
