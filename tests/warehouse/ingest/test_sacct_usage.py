"""sacct's Timelimit and GPU usage (TRESUsageInAve/Max gres/gpuutil, gres/gpumem; Slurm >=
23.02 with NVML) → jobs and job_steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.warehouse.ingest.sacct_support import load, rows
from warehouse.kernel.engine import Engine


def test_time_limits(eng: Engine, tmp_path: Path) -> None:
    # sacct prints Timelimit as scontrol does (mins2time_str: [D-]HH:MM:SS, UNLIMITED, and
    # Partition_Limit for none of the job's own); MM:SS and bare minutes are Slurm's input forms.
    limits = ["1-00:00:00", "02:00:00", "30:00", "90", "UNLIMITED", "Partition_Limit", "", "2 h"]
    text = "JobID|State|Timelimit\n" + "".join(
        f"{i}|COMPLETED|{limit}\n" for i, limit in enumerate(limits, 1)
    )
    result = load(eng, tmp_path, text)
    assert result.rows == {"jobs": 7} and result.rejected == 1
    assert rows(eng, "SELECT job_id, time_limit_s FROM jobs ORDER BY 1") == [
        ("1", 86400.0), ("2", 7200.0), ("3", 1800.0), ("4", 5400.0), ("5", None), ("6", None),
        ("7", None),
    ]  # fmt: skip
    assert rows(eng, "SELECT line, field, reason FROM wanka.ingest_rejects") == [
        (9, "Timelimit", "not a time limit like 1-00:00:00, 30 (minutes) or UNLIMITED: '2 h'")
    ]


#: TRESUsageInAve/Max as Slurm writes them (src/common/slurmdb_defs.c,
#: slurmdb_make_tres_string_from_simple): entries sorted by name, cpu as a duration, gres/gpuutil
#: a whole percentage, the rest sizes in bytes with 1024-based suffixes (convert_num_unit: `%.2f`
#: where the value is not whole). The layout of the entries is the one a public parser of real
#: output expects (`cpu=...,energy=...,fs/disk=...,gres/gpumem=\w+,gres/gpuutil=\d+,mem=...K,
#: pages=...,vmem=...K`); `gres/gpumem=21794M` with `gres/gpuutil=99` is what a Slurm 26.05 vLLM
#: job showed in someone's notes on NVML accounting.
USAGE = (
    "cpu={cpu},energy=0,fs/disk=5071,gres/gpumem={mem},gres/gpuutil={util},mem=1060K,pages=0,"
    "vmem=226396K"
)
USAGE_HEADER = "JobID|State|Elapsed|Timelimit|AllocTRES|TRESUsageInAve|TRESUsageInMax"


def usage_line(step: str, elapsed: str, ave: tuple[str, str], peak: tuple[str, str]) -> str:
    mean = USAGE.format(cpu="00:52:45", mem=ave[0], util=ave[1])
    most = USAGE.format(cpu="00:52:45", mem=peak[0], util=peak[1])
    return f"{step}|COMPLETED|{elapsed}||cpu=8,gres/gpu=1,mem=64G,node=1|{mean}|{most}"


def test_gpu_usage_of_steps_and_of_their_job(eng: Engine, tmp_path: Path) -> None:
    text = "\n".join(
        [
            USAGE_HEADER,
            "20|COMPLETED|01:00:00|02:00:00|billing=8,cpu=8,gres/gpu=1,mem=64G,node=1||",
            usage_line("20.batch", "01:00:00", ("512M", "3"), ("1.50G", "8")),
            usage_line("20.extern", "00:59:59", ("0", "0"), ("0", "0")),
            usage_line("20.0", "00:58:00", ("21794M", "99"), ("79.50G", "100")),
            # A job line with usage of its own keeps it.
            "21|COMPLETED|00:10:00|UNLIMITED|cpu=8|"
            + USAGE.format(cpu="00:01:00", mem="2G", util="40")
            + "|",
            usage_line("21.0", "00:10:00", ("4G", "90"), ("8G", "95")),
            # No GPU entries (a CPU job, or Slurm without NVML): NULL, not zero.
            "22|COMPLETED|00:05:00|00:10:00|cpu=2||",
            "22.0|COMPLETED|00:05:00||cpu=2|cpu=00:04:00,mem=100K|cpu=00:04:00,mem=200K",
        ]
    )
    assert load(eng, tmp_path, text + "\n").rejected == 0
    select = "gpu_util_ave, gpu_util_max, gpu_mem_ave_mib, gpu_mem_max_mib FROM "
    assert rows(eng, f"SELECT step_id, {select} job_steps WHERE job_id = '20' ORDER BY 1") == [
        ("0", 99.0, 100.0, 21794.0, 79.5 * 1024),
        ("batch", 3.0, 8.0, 512.0, 1536.0),
        ("extern", 0.0, 0.0, 0.0, 0.0),
    ]
    # Job 20 takes its longest step's (the batch step); 21 keeps its average, takes the maximum.
    assert rows(eng, f"SELECT job_id, time_limit_s, {select} jobs ORDER BY 1") == [
        ("20", 7200.0, 3.0, 8.0, 512.0, 1536.0),
        ("21", None, 40.0, 95.0, 2048.0, 8192.0),
        ("22", 600.0, None, None, None, None),
    ]


def test_gpu_usage_without_a_header(eng: Engine, tmp_path: Path) -> None:
    body = "\n".join(
        [
            "30|COMPLETED|00:20:00|00:30:00|cpu=8||",
            usage_line("30.0", "00:20:00", ("1T", "50"), ("2T", "70")),
        ]
    )
    result = load(eng, tmp_path, body + "\n", columns=tuple(USAGE_HEADER.split("|")))
    assert result.rows == {"jobs": 1, "job_steps": 1}
    assert rows(eng, "SELECT gpu_util_ave, gpu_mem_max_mib, time_limit_s FROM jobs") == [
        (50.0, 2.0 * 2**20, 1800.0)
    ]


def test_bad_gpu_usage_is_rejected(eng: Engine, tmp_path: Path) -> None:
    text = "\n".join(
        [
            USAGE_HEADER,
            usage_line("40.0", "00:01:00", ("lots", "50"), ("1G", "60")),
            usage_line("41.0", "00:01:00", ("1G", "fifty"), ("1G", "60")),
            usage_line("42.0", "00:01:00", ("1G", "50"), ("1G", "60")),
        ]
    )
    result = load(eng, tmp_path, text + "\n")
    assert result.rows == {"job_steps": 1} and result.rejected == 2
    assert rows(eng, "SELECT line, field, reason FROM wanka.ingest_rejects ORDER BY 1") == [
        (2, "TRESUsageInAve", "gres/gpumem 'lots' is not a size like 21794M"),
        (3, "TRESUsageInAve", "gres/gpuutil 'fifty' is not a percentage like 45"),
    ]


def test_a_job_split_between_blocks_still_gets_its_steps_usage(
    eng: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warehouse.ingest import blocks

    whole = blocks.line_frames
    monkeypatch.setattr(blocks, "line_frames", lambda stream: whole(stream, block_bytes=300))
    lines = [USAGE_HEADER]
    for job_id in range(50, 56):
        lines.append(f"{job_id}|COMPLETED|00:30:00|01:00:00|cpu=8||")
        lines.append(usage_line(f"{job_id}.batch", "00:30:00", ("1M", "1"), ("1M", "2")))
        lines.append(usage_line(f"{job_id}.0", "00:29:00", ("2M", "80"), ("3M", "90")))
    assert load(eng, tmp_path, "\n".join(lines) + "\n").rows == {"jobs": 6, "job_steps": 12}
    assert rows(eng, "SELECT DISTINCT gpu_util_ave, gpu_util_max FROM jobs") == [(1.0, 2.0)]
