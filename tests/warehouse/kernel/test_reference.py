"""The reference tables (sql/reference/*.csv) load, cover the hardware we model, and hold sane,
published figures; NVIDIA full names match what nvidia-smi really reports."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine

REPO = Path(__file__).resolve().parents[3]

REQUIRED_GPUS = {
    "A100",
    "H100",
    "H200",
    "B200",
    "GB200",
    "MI300X",
    "Ascend 910B",
    "V100",
    "T4",
    "A10",
    "P100",
    "L40S",
}
REQUIRED_NICS = {"ConnectX-6", "ConnectX-7", "25GbE", "100GbE"}


@pytest.fixture(scope="module")
def engine(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as eng:
        yield eng


def _rows(engine: Engine, table: str) -> dict[str, dict[str, Any]]:
    cur = engine.cursor()
    try:
        result = cur.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in result.description]
        return {row[0]: dict(zip(names, row, strict=True)) for row in result.fetchall()}
    finally:
        cur.close()


@pytest.fixture(scope="module")
def gpus(engine: Engine) -> dict[str, dict[str, Any]]:
    return _rows(engine, "gpu_models")


@pytest.fixture(scope="module")
def nics(engine: Engine) -> dict[str, dict[str, Any]]:
    return _rows(engine, "nic_models")


# -- coverage and provenance -------------------------------------------------------------------


def test_required_models_present(
    gpus: dict[str, dict[str, Any]], nics: dict[str, dict[str, Any]]
) -> None:
    assert not REQUIRED_GPUS - gpus.keys(), f"missing GPUs: {REQUIRED_GPUS - gpus.keys()}"
    assert not REQUIRED_NICS - nics.keys(), f"missing NICs: {REQUIRED_NICS - nics.keys()}"


def test_every_csv_row_is_loaded(
    engine: Engine, gpus: dict[str, dict[str, Any]], nics: dict[str, dict[str, Any]]
) -> None:
    for table, rows in (("gpu_models", gpus), ("nic_models", nics)):
        csv_path = REPO / "sql" / "reference" / f"{table}.csv"
        lines = [ln for ln in csv_path.read_text(encoding="utf-8").splitlines()[1:] if ln.strip()]
        assert len(rows) == len(lines), f"{csv_path.name}: {len(lines)} lines, {len(rows)} rows"


def test_every_row_cites_a_source(
    gpus: dict[str, dict[str, Any]], nics: dict[str, dict[str, Any]]
) -> None:
    for model, row in [*gpus.items(), *nics.items()]:
        assert row["source"] and row["source"].strip(), f"{model}: empty source"


def test_csv_files_are_tidy() -> None:
    for path in sorted((REPO / "sql" / "reference").glob("*.csv")):
        text = path.read_text(encoding="utf-8")
        assert text.endswith("\n") and "\r" not in text, path.name
        for number, line in enumerate(text.splitlines(), start=1):
            assert line == line.rstrip(), f"{path.name}:{number}: trailing whitespace"
            assert line, f"{path.name}:{number}: blank line"


# -- physical sanity ---------------------------------------------------------------------------


def test_gpu_figures_are_physically_sane(gpus: dict[str, dict[str, Any]]) -> None:
    for model, g in gpus.items():
        assert g["vendor"], model
        assert g["tdp_w"] > 0, model
        if g["idle_w"] is not None:
            assert 0 < g["idle_w"] < g["tdp_w"], model
        assert g["bf16_tflops"] > 0, model
        if g["fp8_tflops"] is not None:
            # FP8 tensor throughput is twice the 16-bit rate on every part that has it
            assert g["fp8_tflops"] == pytest.approx(2 * g["bf16_tflops"], rel=0.02), model
        assert g["hbm_gb"] > 0, model
        assert 0.2 < g["hbm_tbs"] < 20, model
        assert g["scaleup_gbs"] >= 0, model
        assert (g["scaleup_gbs"] == 0) == (g["scaleup_link"] == "none"), model
        assert 3 <= g["pcie_gen"] <= 6, model
        assert g["pcie_lanes"] in (8, 16), model
        assert 2014 <= g["release_year"] <= 2030, model


def test_nic_figures_are_physically_sane(nics: dict[str, dict[str, Any]]) -> None:
    for model, n in nics.items():
        assert n["line_rate_gbps"] > 0, model
        assert n["ports"] >= 1, model
        assert 3 <= n["pcie_gen"] <= 6, model
        assert n["pcie_lanes"] in (8, 16), model
        # a port must fit the host link: PCIe gen g x lanes carries about 1 GB/s * 2^(g-3) per lane
        pcie_gbps = 8 * n["pcie_lanes"] * 2 ** (n["pcie_gen"] - 3) * 0.985
        assert n["line_rate_gbps"] <= pcie_gbps * 1.05, model


# -- exact published figures -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "column", "value"),
    [
        ("A100", "tdp_w", 400),
        ("A100", "bf16_tflops", 312),
        ("A100", "scaleup_gbs", 600),
        ("A100", "pcie_gen", 4),
        ("A100", "hbm_gb", 80),
        ("A100", "hbm_tbs", 2.039),
        ("H100", "tdp_w", 700),
        ("H100", "bf16_tflops", 989.4),
        ("H100", "fp8_tflops", 1978.9),
        ("H100", "scaleup_gbs", 900),
        ("H100", "hbm_gb", 80),
        ("H100", "hbm_tbs", 3.35),
        ("H100", "pcie_gen", 5),
        ("H200", "hbm_gb", 141),
        ("H200", "hbm_tbs", 4.8),
        ("B200", "scaleup_gbs", 1800),
        ("GB200", "bf16_tflops", 2500),
        ("MI300X", "hbm_gb", 192),
        ("MI300X", "hbm_tbs", 5.3),
        ("MI300X", "bf16_tflops", 1307.4),
        ("MI300X", "scaleup_gbs", 896),
        ("L40S", "tdp_w", 350),
        ("L40S", "scaleup_gbs", 0),
        ("V100", "scaleup_gbs", 300),
        ("T4", "tdp_w", 70),
    ],
)
def test_published_gpu_figures(
    gpus: dict[str, dict[str, Any]], model: str, column: str, value: float
) -> None:
    assert gpus[model][column] == pytest.approx(value)


def test_gpus_without_fp8_have_none(gpus: dict[str, dict[str, Any]]) -> None:
    for model in ("A100", "V100", "T4", "A10", "P100", "Ascend 910B"):
        assert gpus[model]["fp8_tflops"] is None, model


@pytest.mark.parametrize(
    ("model", "rate", "gen", "lanes"),
    [
        ("ConnectX-7", 400, 5, 16),
        ("ConnectX-6", 200, 4, 16),
        ("25GbE", 25, 3, 8),
        ("100GbE", 100, 4, 16),
    ],
)
def test_published_nic_figures(
    nics: dict[str, dict[str, Any]], model: str, rate: int, gen: int, lanes: int
) -> None:
    n = nics[model]
    assert (n["line_rate_gbps"], n["pcie_gen"], n["pcie_lanes"]) == (rate, gen, lanes)


# -- names as nvidia-smi reports them ----------------------------------------------------------


def _shared_data() -> Path:
    folder = Path(os.environ.get("WANKA_SHARED_DATA", REPO.parent / "shared" / "data"))
    captures = folder / "nvidia-smi"
    if not captures.is_dir():
        message = f"real nvidia-smi captures not found in {captures} (set WANKA_SHARED_DATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return captures


def _capture(slug: str) -> str:
    found = sorted(_shared_data().glob(f"*__{slug}__*.txt"))
    assert found, f"no nvidia-smi capture named *__{slug}__*.txt"
    return found[0].read_text(encoding="utf-8", errors="replace")


def _reported_name(capture: str) -> str:
    """The device name from the `nvidia-smi -L` section: 'GPU 0: <name> (UUID: ...)'."""
    match = re.search(r"^GPU 0: (.+?) \(UUID: ", capture, re.MULTILINE)
    assert match, "no `nvidia-smi -L` line in capture"
    return match[1]


@pytest.mark.parametrize(
    ("model", "slug"), [("H100", "nvidia-h100-80gb-hbm3"), ("L40S", "nvidia-l40s")]
)
def test_full_name_matches_nvidia_smi(
    gpus: dict[str, dict[str, Any]], model: str, slug: str
) -> None:
    capture = _capture(slug)
    name = _reported_name(capture)
    assert gpus[model]["full_name"] == name
    product = re.search(r"^\s*Product Name\s*: (.+?)\s*$", capture, re.MULTILINE)
    assert product and product[1] == name


def test_h100_idle_power_matches_capture(gpus: dict[str, dict[str, Any]]) -> None:
    capture = _capture("nvidia-h100-80gb-hbm3")
    idle = capture.split("# idle :: query (-q)", 1)[1].split("# idle :: query-gpu", 1)[0]
    match = re.search(r"Average Power Draw\s*: ([\d.]+) W", idle)
    assert match
    assert gpus["H100"]["idle_w"] == pytest.approx(float(match[1]), abs=1.0)
    default_limit = re.search(r"Default Power Limit\s*: ([\d.]+) W", idle)
    assert default_limit and gpus["H100"]["tdp_w"] == pytest.approx(float(default_limit[1]))


def test_every_captured_gpu_is_a_known_model(gpus: dict[str, dict[str, Any]]) -> None:
    names = {g["full_name"] for g in gpus.values()}
    for path in sorted(_shared_data().glob("*.txt")):
        name = _reported_name(path.read_text(encoding="utf-8", errors="replace"))
        assert name in names, f"{path.name}: {name!r} is not a full_name in gpu_models"


@pytest.fixture(scope="module")
def xids(engine: Engine) -> dict[int, dict[str, Any]]:
    return {int(k): v for k, v in _rows(engine, "xid_codes").items()}


CATEGORIES = {"application", "driver_firmware", "memory", "nvlink", "fell_off_bus",
              "power_thermal", "video_engine", "virtualisation", "informational", "unused",
              "none"}  # fmt: skip
ACTIONS = {"none", "reset_gpu", "drain_node", "rma"}


def test_xid_codes_cover_the_catalog_with_a_category_and_an_action(
    xids: dict[int, dict[str, Any]],
) -> None:
    assert set(range(0, 173)) <= set(xids)
    assert {r["category"] for r in xids.values()} <= CATEGORIES
    assert {r["action"] for r in xids.values()} <= ACTIONS
    assert all(r["description"] and r["source"] for r in xids.values())
    # the ones every GPU operator meets, as NVIDIA's catalog buckets them
    expected = {
        13: ("application", "none"), 31: ("application", "none"), 48: ("memory", "reset_gpu"),
        63: ("memory", "none"), 64: ("memory", "reset_gpu"), 74: ("nvlink", "reset_gpu"),
        79: ("fell_off_bus", "drain_node"), 94: ("memory", "none"), 95: ("memory", "reset_gpu"),
        119: ("driver_firmware", "reset_gpu"), 140: ("memory", "reset_gpu"),
    }  # fmt: skip
    assert {x: (xids[x]["category"], xids[x]["action"]) for x in expected} == expected
    assert xids[79]["nvidia_immediate_action"] == "RESTART_BM"


@pytest.mark.skipif(
    not (Path(os.environ.get("WANKA_SHARED_DATA", REPO.parent / "shared" / "data"))
         / "dcgm" / "xid_codes.csv").exists(),
    reason="no shared data",
)  # fmt: skip
def test_xid_descriptions_are_dcgm_exporters(xids: dict[int, dict[str, Any]]) -> None:
    import csv

    shared = Path(os.environ.get("WANKA_SHARED_DATA", REPO.parent / "shared" / "data"))
    with (shared / "dcgm" / "xid_codes.csv").open(encoding="utf-8") as handle:
        theirs = {int(r["xid"]): r["description"] for r in csv.DictReader(handle)}
    assert {x: xids[x]["description"] for x in theirs} == theirs
