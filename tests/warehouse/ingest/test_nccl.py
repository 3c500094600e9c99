"""nccl-tests output → nccl_results, one row per message size and placement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import warehouse.ingest.nccl  # noqa: F401  (registers the format)
from warehouse.errors import UserError
from warehouse.ingest import IngestResult, ReadOptions, ingest
from warehouse.kernel.engine import Engine

_BUS_IDS = ["0x18", "0x2a", "0x3a", "0x5d", "0x9a", "0xab", "0xba", "0xdb"]
RANKS = "\n".join(
    f"#  Rank {r:2d} Group  0 Pid {41230 + r:6d} on gpu-node-{r // 8 + 1:02d} device {r % 8:2d} "
    f"[{_BUS_IDS[r % 8]}] NVIDIA H100 80GB HBM3"
    for r in range(16)
)
# all_reduce_perf -b 8 -e 8G -f 8 -g 1 under mpirun -np 16 on two 8×H100 nodes. The last line
# is the published 16-GPU figure: 8 GiB in 47,535 µs is algbw 180.71 GB/s and busbw
# 180.71 × 2·15/16 = 338.83 GB/s.
ALL_REDUCE = f"""\
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 8(factor) warmup iters: 5 iters: 20 \
agg iters: 1 validation: 1 graph: 0
#
# Using devices
{RANKS}
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
           8             2     float     sum      -1    28.00    0.00    0.00      0    27.86    0.00    0.00      0
          64            16     float     sum      -1    28.00    0.00    0.00      0    27.86    0.00    0.00      0
         512           128     float     sum      -1    28.00    0.02    0.03      0    27.86    0.02    0.03      0
        4096          1024     float     sum      -1    28.04    0.15    0.27      0    27.90    0.15    0.28      0
       32768          8192     float     sum      -1    28.29    1.16    2.17      0    28.15    1.16    2.18      0
      262144         65536     float     sum      -1    30.30    8.65   16.22      0    30.15    8.69   16.30      0
     2097152        524288     float     sum      -1    46.44   45.16   84.68      0    46.20   45.39   85.10      0
    16777216       4194304     float     sum      -1   175.49   95.60  179.25      0   174.61   96.08  180.15      0
   134217728      33554432     float     sum      -1   765.46  175.34  328.77      0   761.63  176.22  330.42      0
  1073741824     268435456     float     sum      -1   5927.7  181.14  339.64      0   5898.0  182.05  341.34      0
  8589934592    2147483648     float     sum      -1    47535  180.71  338.83      0    47412  181.18  339.71      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 120.452 
#
"""  # noqa: E501, W291

# nccl-tests 2.0 on a DGX-1: no Group, no root column, an `error` magnitude instead of #wrong.
OLD_ALL_GATHER = """\
# nThread 1 nGpus 8 minBytes 1048576 maxBytes 134217728 step: 8(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  21034 on      dgx1 device  0 [0x06] Tesla V100-SXM2-32GB
#   Rank  1 Pid  21034 on      dgx1 device  1 [0x07] Tesla V100-SXM2-32GB
#   Rank  2 Pid  21034 on      dgx1 device  2 [0x0a] Tesla V100-SXM2-32GB
#   Rank  3 Pid  21034 on      dgx1 device  3 [0x0b] Tesla V100-SXM2-32GB
#   Rank  4 Pid  21034 on      dgx1 device  4 [0x85] Tesla V100-SXM2-32GB
#   Rank  5 Pid  21034 on      dgx1 device  5 [0x86] Tesla V100-SXM2-32GB
#   Rank  6 Pid  21034 on      dgx1 device  6 [0x89] Tesla V100-SXM2-32GB
#   Rank  7 Pid  21034 on      dgx1 device  7 [0x8a] Tesla V100-SXM2-32GB
#
#                                             out-of-place                    in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576         32768   float    none    60.25   17.40   15.23  0e+00    57.81   18.14   15.87  0e+00
     8388608        262144   float    none    263.4   31.85   27.87  0e+00    259.9   32.28   28.24  0e+00
   134217728       4194304   float    none   3801.0   35.31   30.90  0e+00   3795.4   35.36   30.94  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 24.84
#
"""  # noqa: E501

# alltoall_perf with validation off (-c 0), found by the command line the job script echoed.
ALLTOALL = """\
+ mpirun -np 8 --bind-to numa ./build/alltoall_perf -b 1M -e 64M -f 8 -g 1 -c 0
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 67108864 step: 8(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 0 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   7701 on      b200-a device  0 [0000:1b:00] NVIDIA B200
#  Rank  1 Group  0 Pid   7702 on      b200-a device  1 [0000:43:00] NVIDIA B200
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        131072     float    none      -1    12.97   80.85   40.42    N/A    12.64   82.96   41.48    N/A
     8388608       1048576     float    none      -1    27.49  305.15  152.58    N/A    27.31  307.16  153.58    N/A
    67108864       8388608     float    none      -1    142.8  469.96  234.98    N/A    142.5  470.94  235.47    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 143.09
#
"""  # noqa: E501


def load(eng: Engine, folder: Path, text: str, name: str, **opts: Any) -> IngestResult:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    [result] = ingest(eng, "nccl-tests", [str(path)], ReadOptions(**opts))
    return result


def rows(eng: Engine, sql: str) -> list[tuple[Any, ...]]:
    return eng.con.sql(sql).fetchall()


def test_an_all_reduce_run_on_16_h100(eng: Engine, tmp_path: Path) -> None:
    result = load(eng, tmp_path, ALL_REDUCE, "all_reduce_perf.log")
    assert result.rows == {"nccl_results": 22} and result.rejected == 0
    path = str(tmp_path / "all_reduce_perf.log")
    assert rows(
        eng,
        "SELECT DISTINCT run_id, collective, ranks, hosts, gpu_model, dtype, redop, root "
        "FROM nccl_results",
    ) == [(path, "all_reduce", 16, ["gpu-node-01", "gpu-node-02"], "H100", "float", "sum", None)]
    assert rows(
        eng,
        "SELECT placement, size_bytes, count, time_us, algbw_gbs, busbw_gbs, wrong "
        "FROM nccl_results WHERE size_bytes = 8589934592 ORDER BY placement DESC",
    ) == [
        ("out-of-place", 8589934592, 2147483648, 47535.0, 180.71, 338.83, 0),
        ("in-place", 8589934592, 2147483648, 47412.0, 181.18, 339.71, 0),
    ]
    # Every row agrees with the model function: busbw = algbw × 2(n−1)/n, to print precision.
    assert rows(
        eng,
        "SELECT count(*) FROM nccl_results "
        "WHERE abs(busbw_gbs - algbw_gbs * 2 * (ranks - 1) / ranks) > 0.015",
    ) == [(0,)]


def test_mpi_tagged_output_reads_the_same(eng: Engine, tmp_path: Path) -> None:
    tagged = "".join(f"[1,0]<stdout>:{line}\n" for line in ALL_REDUCE.splitlines())
    labelled = "".join(f"0: {line}\n" for line in ALL_REDUCE.splitlines())
    load(eng, tmp_path, ALL_REDUCE, "plain.log", collective="all_reduce")
    load(eng, tmp_path, tagged, "tagged.log", collective="allreduce")
    load(eng, tmp_path, labelled, "labelled.log", collective="all_reduce_perf")
    # Three runs, identical but for their run_id.
    assert rows(eng, "SELECT count(*), count(DISTINCT run_id) FROM nccl_results") == [(66, 3)]
    assert rows(
        eng, "SELECT count(*) FROM (SELECT DISTINCT * EXCLUDE (run_id, batch_id) FROM nccl_results)"
    ) == [(22,)]


def test_an_older_release_without_root_and_with_error(eng: Engine, tmp_path: Path) -> None:
    result = load(eng, tmp_path, OLD_ALL_GATHER, "dgx1.txt", collective="allgather")
    assert result.rows == {"nccl_results": 6}
    assert rows(
        eng,
        "SELECT collective, ranks, hosts, gpu_model, redop, root, placement, time_us, busbw_gbs, "
        "wrong FROM nccl_results WHERE size_bytes = 134217728 ORDER BY placement DESC",
    ) == [
        ("all_gather", 8, ["dgx1"], "V100", None, None, "out-of-place", 3801.0, 30.90, None),
        ("all_gather", 8, ["dgx1"], "V100", None, None, "in-place", 3795.4, 30.94, None),
    ]


def test_alltoall_from_the_command_line_with_validation_off(eng: Engine, tmp_path: Path) -> None:
    load(eng, tmp_path, ALLTOALL, "job-1234.out")
    assert rows(
        eng,
        "SELECT DISTINCT collective, ranks, gpu_model, count(wrong) OVER () FROM nccl_results",
    ) == [("all_to_all", 2, "B200", 0)]


def test_a_file_with_two_runs(eng: Engine, tmp_path: Path) -> None:
    gather = OLD_ALL_GATHER.replace("Tesla V100-SXM2-32GB", "NVIDIA A100-SXM4-40GB")
    text = f"$ ./all_reduce_perf -b 8 -e 8G -f 8\n{ALL_REDUCE}$ ./all_gather_perf\n{gather}"
    load(eng, tmp_path, text, "sweep.log")
    name = str(tmp_path / "sweep.log")
    assert rows(
        eng,
        "SELECT run_id, collective, gpu_model, ranks, count(*) FROM nccl_results GROUP BY ALL "
        "ORDER BY run_id",
    ) == [(name, "all_reduce", "H100", 16, 22), (f"{name}#2", "all_gather", "A100", 8, 6)]


def test_unreadable_result_lines_are_rejected(eng: Engine, tmp_path: Path) -> None:
    lines = ALL_REDUCE.splitlines()
    at = lines.index(next(line for line in lines if line.strip().startswith("32768 ")))
    lines[at:at] = [
        "gpu-node-01:41230:41230 [0] NCCL INFO comm 0x5581 rank 0 nranks 16 - Init COMPLETE",
        "       65536   16384   float   sum   -1   29.1   2.25",
        "gpu-node-02: Test NCCL failure common.cu:1005 'unhandled system error'",
        "      131072   32768   float   sum   -1   fast   4.51   8.45   0   29.0   4.52   8.47   0",
    ]
    result = load(eng, tmp_path, "\n".join(lines) + "\n", "all_reduce_perf.log")
    assert result.rows == {"nccl_results": 22} and result.rejected == 3
    # Line 28, NCCL's own log, is not a result and is skipped; the failure is kept whole.
    assert rows(eng, "SELECT line, reason FROM wanka.ingest_rejects ORDER BY line") == [
        (29, "expected 13 columns as the header names, found 7"),
        (30, "not an nccl-tests result line"),
        (31, "time: not a number: 'fast'"),
    ]
    assert rows(eng, "SELECT raw FROM wanka.ingest_rejects WHERE line = 30") == [
        ("gpu-node-02: Test NCCL failure common.cu:1005 'unhandled system error'",)
    ]


def test_no_results_is_an_error_and_stores_nothing(eng: Engine, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no nccl-tests results found"):
        load(eng, tmp_path, "mpirun: command not found\n", "all_reduce_perf.log")
    assert rows(eng, "SELECT count(*) FROM wanka.ingest_batches") == [(0,)]


def test_an_unknown_collective_is_a_usage_error(eng: Engine, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown collective 'allreduc'"):
        load(eng, tmp_path, ALL_REDUCE, "x.log", collective="allreduc")
