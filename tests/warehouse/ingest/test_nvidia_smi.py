"""`wanka ingest nvidia-smi`: the real captures, units or not, headers or not, and bad rows."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from warehouse.errors import UserError
from warehouse.ingest import ReadOptions, ingest
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

MTIME = datetime(2025, 1, 10, 18, 0, tzinfo=UTC)
HEADER = "timestamp, name, index, uuid, utilization.gpu [%], memory.used [MiB], power.draw [W]"
ROWS = [
    "2025/01/10 18:33:53.123, NVIDIA H100 80GB HBM3, 0, GPU-a, 100 %, 143771 MiB, 627.40 W",
    "2025/01/10 18:33:53.123, NVIDIA H100 80GB HBM3, 1, GPU-b, 3 %, 0 MiB, [N/A]",
]


def write(tmp_path: Path, lines: list[str], name: str = "node7.csv") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (MTIME.timestamp(), MTIME.timestamp()))
    return path


def metrics(eng: Engine) -> list[tuple[Any, ...]]:
    return eng.con.sql(
        "SELECT ts, host, gpu, uuid, model, metric, value FROM gpu_metrics ORDER BY gpu, metric"
    ).fetchall()


def rejects(eng: Engine) -> list[tuple[Any, ...]]:
    return eng.con.sql(
        "SELECT line, field, reason FROM wanka.ingest_rejects ORDER BY line"
    ).fetchall()


def test_real_captures_ingest_every_query_gpu_value(eng: Engine, shared_data: Path) -> None:
    # Hand count (field by field, both files): each holds two --query-gpu CSV sections (idle,
    # load) of one row each, and each row has 82 numeric values that are not [N/A]: count 1,
    # pcie.link gen ×4 + width ×2, accounting.buffer_size, clocks_event_reasons .supported +
    # .active (hex), 5 clocks_event_reasons_counters, memory ×4, utilization ×6, encoder.stats
    # ×3, ecc 16 (device_memory, dram, sram, total × corrected/uncorrected × volatile/aggregate)
    # + 4 sram parity/secded + 5 sram l2/sm/mcu/pcie/other, then
    #   H100: remapped_rows 2 + histogram 5, temperature ×3, power ×8, edpp_multiplier,
    #   L40S: remapped_rows 4 (with *_inactive) + histogram 5, temperature ×2, power ×8,
    # clocks.current ×4, clocks.max ×3, protected_memory ×3. 2 × 82 = 164 rows per file.
    folder = shared_data / "nvidia-smi"
    h100 = folder / "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
    l40s = folder / "linux-x86_64__nvidia-l40s__595.80.txt"
    results = ingest(eng, "nvidia-smi", [str(h100), str(l40s)])
    assert [(r.total_rows, r.rejected) for r in results] == [(164, 0), (164, 0)]
    per_host = eng.con.sql(
        "SELECT host, model, count(*), count(DISTINCT ts), count(DISTINCT metric) "
        "FROM gpu_metrics GROUP BY ALL ORDER BY host"
    ).fetchall()
    assert per_host == [(h100.stem, "H100", 164, 2, 82), (l40s.stem, "L40S", 164, 2, 82)]
    load = dict(
        eng.con.sql(
            "SELECT metric, value FROM gpu_metrics WHERE host = ? AND ts = ?",
            params=[h100.stem, datetime(2026, 7, 14, 8, 12, 53, 353_000, tzinfo=UTC)],
        ).fetchall()
    )
    assert load["DCGM_FI_DEV_POWER_USAGE"] == 631.95
    assert load["DCGM_FI_DEV_POWER_USAGE_INSTANT"] == 625.68
    assert load["DCGM_FI_DEV_GPU_UTIL"] == 100 and load["DCGM_FI_DEV_FB_USED"] == 19818
    assert load["DCGM_FI_DEV_GPU_TEMP"] == 59 and load["DCGM_FI_DEV_SM_CLOCK"] == 1980
    assert load["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"] == 0
    assert load["nvidia_smi.power.draw.average"] == 631.95
    assert load["nvidia_smi.clocks_event_reasons.supported"] == 0x1FF
    [(labels,)] = eng.con.sql(
        "SELECT DISTINCT labels FROM gpu_metrics WHERE host = ? AND gpu = 0 "
        "AND metric = 'DCGM_FI_DEV_GPU_UTIL' AND value = 0",
        params=[h100.stem],
    ).fetchall()
    labels = json.loads(labels)
    assert labels["modelName"] == "NVIDIA H100 80GB HBM3" and labels["pstate"] == "P0"
    assert labels["pci_bus_id"] == "00000000:00:09.0" and labels["serial"] == "0000000000000"
    assert labels["driver_version"] == "590.48.01" and labels["vbios_version"] == "96.00.A5.00.01"


def test_units_or_nounits_read_the_same(eng: Engine, tmp_path: Path) -> None:
    nounits = [HEADER] + [r.replace(" %", "").replace(" MiB", "").replace(" W", "") for r in ROWS]
    ingest(eng, "nvidia-smi", [str(write(tmp_path, [HEADER, *ROWS]))])
    with_units = metrics(eng)
    execute(eng.con, "DELETE FROM gpu_metrics").read_all()
    ingest(eng, "nvidia-smi", [str(write(tmp_path, nounits, "other.csv"))])
    assert [r[2:] for r in metrics(eng)] == [r[2:] for r in with_units]
    at = datetime(2025, 1, 10, 18, 33, 53, 123_000, tzinfo=UTC)
    assert with_units == [
        (at, "node7", 0, "GPU-a", "H100", "DCGM_FI_DEV_FB_USED", 143771.0),
        (at, "node7", 0, "GPU-a", "H100", "DCGM_FI_DEV_GPU_UTIL", 100.0),
        (at, "node7", 0, "GPU-a", "H100", "DCGM_FI_DEV_POWER_USAGE", 627.4),
        (at, "node7", 1, "GPU-b", "H100", "DCGM_FI_DEV_FB_USED", 0.0),
        (at, "node7", 1, "GPU-b", "H100", "DCGM_FI_DEV_GPU_UTIL", 3.0),
    ]  # power.draw [N/A] on GPU 1: no row, no reject
    assert rejects(eng) == []


def test_noheader_takes_columns_and_fails_clearly_without(eng: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, ["0, 61 %, 300.5 W", "1, 62 %, 301.5 W"])
    with pytest.raises(UserError, match=r"without a header: pass --columns"):
        ingest(eng, "nvidia-smi", [str(path)])
    options = ReadOptions(columns=("index", "utilization.gpu", "power.draw"), host="gpu-node-3")
    [result] = ingest(eng, "nvidia-smi", [str(path)], options)
    assert result.total_rows == 4
    rows = metrics(eng)
    assert {r[0] for r in rows} == {MTIME} and {r[1] for r in rows} == {"gpu-node-3"}
    assert [(r[2], r[5], r[6]) for r in rows] == [
        (0, "DCGM_FI_DEV_GPU_UTIL", 61.0), (0, "DCGM_FI_DEV_POWER_USAGE", 300.5),
        (1, "DCGM_FI_DEV_GPU_UTIL", 62.0), (1, "DCGM_FI_DEV_POWER_USAGE", 301.5),
    ]  # fmt: skip


def test_loop_output_with_repeated_headers(eng: Engine, tmp_path: Path) -> None:
    later = [r.replace("18:33:53.123", "18:33:58.125") for r in ROWS]
    [result] = ingest(eng, "nvidia-smi", [str(write(tmp_path, [HEADER, *ROWS, HEADER, *later]))])
    assert (result.total_rows, result.rejected) == (10, 0)
    assert eng.con.sql("SELECT count(DISTINCT ts) FROM gpu_metrics").fetchall() == [(2,)]


def test_absent_values_are_skipped_and_bad_ones_rejected(eng: Engine, tmp_path: Path) -> None:
    header = (
        "index, pstate, fan.speed [%], clocks.sm [MHz], temperature.gpu, display_mode, hostname"
    )
    lines = [
        header,
        "0, P0, [Not Supported], [Requested functionality has been deprecated], 41, Enabled, n1",
        "1, P8, N/A, 1410 MHz, hot, [N/A], n1",  # 3: temperature not a number
        "2, P0, 30 %, 1410 MHz",  # 4: too few values
        "3, P0, 30 %, 1410 MHz, 40, Disabled, n2, extra",  # 5: too many
        "x, P0, 30 %, 1410 MHz, 40, Disabled, n2",  # 6: index not a number
        "4, P0, 30 W, 1410 MHz, 40, Disabled, n2",  # 7: fan speed in the wrong unit
    ]
    [result] = ingest(eng, "nvidia-smi", [str(write(tmp_path, lines))])
    assert [(r[0], r[1]) for r in rejects(eng)] == [
        (3, "temperature.gpu"), (4, None), (5, None), (6, "index"), (7, "fan.speed"),
    ]  # fmt: skip
    found = rejects(eng)
    assert "expected 7 comma-separated values" in found[1][2] and "found 4" in found[1][2]
    assert "expected a number for temperature.gpu, found 'hot'" in found[0][2]
    assert "expected a number in % for fan.speed" in found[4][2]
    rows = eng.con.sql(
        "SELECT host, gpu, metric, value, labels FROM gpu_metrics ORDER BY gpu, metric"
    ).fetchall()
    assert [r[:4] for r in rows] == [
        ("n1", 0, "DCGM_FI_DEV_GPU_TEMP", 41.0),
        ("n1", 1, "DCGM_FI_DEV_SM_CLOCK", 1410.0),  # the rest of line 3 is kept
        ("n2", 4, "DCGM_FI_DEV_GPU_TEMP", 40.0),
        ("n2", 4, "DCGM_FI_DEV_SM_CLOCK", 1410.0),
    ]
    assert (
        json.loads(rows[0][4]) == {"pstate": "P0", "display_mode": "Enabled"}
        and result.rejected == 5
    )


def test_timezone_stdin_and_instant_power(eng: Engine, tmp_path: Path) -> None:
    lines = ["timestamp, index, power.draw.instant [W]", "2025/07/01 12:00:00.500, 0, 88.5 W"]
    options = ReadOptions(timezone="Europe/Berlin")
    [result] = ingest(
        eng, "nvidia-smi", ["-"], options, stdin=io.BytesIO("\n".join(lines).encode())
    )
    assert result.total_rows == 1
    [row] = metrics(eng)
    assert row[0] == datetime(2025, 7, 1, 10, 0, 0, 500_000, tzinfo=UTC)  # CEST is UTC+2
    assert row[1] == "unknown" and row[5:] == ("DCGM_FI_DEV_POWER_USAGE", 88.5)


def test_capture_without_query_gpu_section_is_an_error(eng: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, ["# idle :: dmon", "# $ nvidia-smi dmon -c 1", "0 70 40"], "cap.txt")
    with pytest.raises(UserError, match=r"no nvidia-smi --query-gpu CSV section"):
        ingest(eng, "nvidia-smi", [str(path)])
    assert eng.con.sql("SELECT count(*) FROM wanka.ingest_batches").fetchall() == [(0,)]


def test_capture_noheader_section_takes_fields_from_the_command(
    eng: Engine, tmp_path: Path
) -> None:
    lines = [
        "# load :: query-gpu (csv, noheader)",
        "# $ nvidia-smi --query-gpu=index,utilization.gpu,memory.total --format=csv,noheader",
        "0, 99 %, 81559 MiB",
        "# load :: dmon",
        "# $ nvidia-smi dmon -c 1",
        "0, 1, 2",  # another section's output: skipped, not rejected
    ]
    [result] = ingest(eng, "nvidia-smi", [str(write(tmp_path, lines, "cap.txt"))])
    assert (result.total_rows, result.rejected) == (2, 0)
    assert [r[5:] for r in metrics(eng)] == [
        ("DCGM_FI_DEV_FB_TOTAL", 81559.0), ("DCGM_FI_DEV_GPU_UTIL", 99.0)
    ]  # fmt: skip
