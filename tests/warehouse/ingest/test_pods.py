"""Kubernetes pod lists (the Alibaba GPU trace) → pods."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import warehouse.ingest.pods  # noqa: F401  (registers the format)
from warehouse.errors import UserError
from warehouse.ingest import IngestResult, ReadOptions, ingest
from warehouse.kernel.engine import Engine

START = datetime(2023, 4, 1, tzinfo=UTC)
HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time"
)


def load(
    eng: Engine, folder: Path, text: str, *, name: str = "pods.csv", **opts: Any
) -> IngestResult:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    options = ReadOptions(**{"trace_start": START, **opts})
    [result] = ingest(eng, "pods", [str(path)], options)
    return result


def rows(eng: Engine, sql: str) -> list[tuple[Any, ...]]:
    return eng.con.sql(sql).fetchall()


def at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


def test_the_alibaba_trace_loads(eng: Engine, shared_data: Path) -> None:
    path = shared_data / "alibaba" / "openb_pod_list_default.csv"
    [result] = ingest(eng, "pods", [str(path)], ReadOptions(trace_start=START, cluster="openb"))
    # 8,153 lines: the header and 8,152 pods with distinct names (MANIFEST, and wc/sort -u).
    assert result.rows == {"pods": 8152} and result.rejected == 0
    select = (
        "SELECT cluster, cpu_milli, memory_mib, num_gpu, gpu_milli, gpus, gpu_spec, qos, "
        "pod_phase, created_at, scheduled_at, deleted_at FROM pods WHERE name = "
    )
    # openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0 — created and scheduled
    # at the very start of the trace: zero is a time here, not "never".
    assert rows(eng, select + "'openb-pod-0000'") == [
        ("openb", 12000, 16384, 1, 1000, 1.0, [], "LS", "Running", at(0), at(0), at(12537496))
    ]
    # openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061 — a shared GPU.
    assert rows(eng, "SELECT gpus FROM pods WHERE name = 'openb-pod-0001'") == [(0.46,)]
    # openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497
    assert rows(eng, select + "'openb-pod-0017'") == [
        ("openb", 88000, 327680, 8, 1000, 8.0, [], "Burstable", "Succeeded", at(9437497),
         at(9437497), at(10769854)),
    ]  # fmt: skip
    # Never scheduled: the 897 Pending pods have an empty scheduled_time.
    assert rows(
        eng, "SELECT pod_phase, count(*) FROM pods WHERE scheduled_at IS NULL GROUP BY ALL"
    ) == [("Pending", 897)]
    # awk -F, 'NR>1 {s += $4 * $5 / 1000} END {print s}' → 6086.8 GPUs asked for in all.
    assert rows(eng, "SELECT round(sum(gpus), 3) FROM pods") == [(6086.8,)]


def test_the_trace_start_is_required(eng: Engine, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"^pods: times are relative to the trace start: pass "):
        load(eng, tmp_path, f"{HEADER}\np,1000,1024,1,1000,,LS,Running,0,10,0\n", trace_start=None)
    assert rows(eng, "SELECT count(*) FROM pods") == [(0,)]


def test_gpu_spec_extra_columns_and_never_scheduled(eng: Engine, tmp_path: Path) -> None:
    text = "\n".join(
        [
            "namespace,name,node,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
            "creation_time,deletion_time,scheduled_time,owner",
            "ml,a,n1,16000,32768,1,1000,V100M16|V100M32,LS,Running,9967058,9968575,9967063,x",
            "ml,b,,4000,15258,1,220,nan,BE,Pending,100,200,0,y",
            "ml,c,n2,4000,15258,2,1000,,BE,Failed,100,0,150,z",
            "ml,d,n2,4000,15258,0,0,,BE,Succeeded,1.5,9.25,2.5,z",
        ]
    )
    assert load(eng, tmp_path, text + "\n", cluster="k8s-a").rejected == 0
    assert rows(
        eng,
        "SELECT name, namespace, node, cluster, gpus, gpu_spec, created_at, scheduled_at, "
        "deleted_at FROM pods ORDER BY name",
    ) == [
        ("a", "ml", "n1", "k8s-a", 1.0, ["V100M16", "V100M32"], at(9967058), at(9967063),
         at(9968575)),
        ("b", "ml", None, "k8s-a", 0.22, [], at(100), None, at(200)),
        ("c", "ml", "n2", "k8s-a", 2.0, [], at(100), at(150), None),
        ("d", "ml", "n2", "k8s-a", 0.0, [], at(1) + timedelta(seconds=0.5), at(2.5),
         at(9) + timedelta(seconds=0.25)),
    ]  # fmt: skip


def test_bad_lines_are_rejected_with_their_numbers(eng: Engine, tmp_path: Path) -> None:
    text = "\n".join(
        [
            HEADER,
            "ok-1,1000,1024,1,1000,,LS,Running,0,10,0",
            "short,1000,1024,1,1000,,LS,Running,0,10",
            "",
            "bad-cpu,many,1024,1,1000,,LS,Running,0,10,0",
            "bad-time,1000,1024,1,1000,,LS,Running,soon,10,0",
            ",1000,1024,1,1000,,LS,Running,0,10,0",
            "half-gpu,1000,1024,0.5,1000,,LS,Running,0,10,0",
            '"quoted,name",1000,1024,1,1000,"A10|T4",LS,Running,0,10,0',
        ]
    )
    result = load(eng, tmp_path, text + "\n")
    assert result.rows == {"pods": 2} and result.rejected == 5
    assert rows(eng, "SELECT name, gpu_spec FROM pods ORDER BY name") == [
        ("ok-1", []),
        ("quoted,name", ["A10", "T4"]),
    ]
    assert rows(eng, "SELECT line, field, reason FROM wanka.ingest_rejects ORDER BY line") == [
        (3, None, "expected 11 comma-separated fields as the header names"),
        (5, "cpu_milli", "cpu_milli: not a number: 'many'"),
        (6, "creation_time", "creation_time: not a number: 'soon'"),
        (7, "name", "name: no pod name"),
        (8, "num_gpu", "num_gpu: not a whole number: '0.5'"),
    ]


def test_a_list_without_a_header_is_refused(eng: Engine, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="expected a pod list with a header line"):
        load(eng, tmp_path, "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n")


def test_a_carriage_return_inside_a_line_is_an_error_or_a_reject_not_a_crash(
    eng: Engine, tmp_path: Path
) -> None:
    """Found by test_fuzz: Python's csv module raises on a bare CR inside a field."""
    with pytest.raises(UserError, match=r"line 1: the header is not CSV"):
        load(eng, tmp_path, f"\r{HEADER}\np,1000,1024,1,1000,,LS,Running,0,10,0\n")
    good = "r,1000,1024,1,1000,,LS,Running,0,10,0"
    text = f'{HEADER}\np\rq,"1000",1024,1,1000,,LS,Running,0,10,0\n{good}\n'
    result = load(eng, tmp_path, text, name="cr.csv")
    assert result.rejected == 1 and result.first_reject is not None
    assert result.first_reject.line == 2
    assert rows(eng, "SELECT name FROM pods") == [("r",)]


def test_a_header_naming_a_column_twice_is_refused(eng: Engine, tmp_path: Path) -> None:
    """Found by test_fuzz: a header run into the first line named "0" twice (a polars error)."""
    with pytest.raises(UserError, match=r"line 1: the header names '0', '1', 'ls' twice$"):
        load(eng, tmp_path, f"{HEADER}\x01p,0,0,1,1000,,LS,LS,0,1,0\n")


def test_a_later_list_replaces_the_pod(eng: Engine, tmp_path: Path) -> None:
    load(eng, tmp_path, f"{HEADER}\np,1000,1024,1,1000,,LS,Pending,5,,\n")
    load(eng, tmp_path, f"{HEADER}\np,1000,1024,1,1000,,LS,Running,5,,7\n", name="later.csv")
    assert rows(eng, "SELECT name, pod_phase, scheduled_at, deleted_at FROM pods") == [
        ("p", "Running", at(7), None)
    ]


def test_a_naive_trace_start_is_in_the_given_zone(eng: Engine, tmp_path: Path) -> None:
    text = f"{HEADER}\np,1000,1024,1,1000,,LS,Running,60,,60\n"
    load(eng, tmp_path, text, trace_start=datetime(2023, 7, 1, 12), timezone="Asia/Shanghai")
    assert rows(eng, "SELECT created_at FROM pods") == [(datetime(2023, 7, 1, 4, 1, tzinfo=UTC),)]
