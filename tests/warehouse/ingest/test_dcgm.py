"""`wanka ingest dcgm`: every quirk of dcgm-exporter text, end to end into DuckDB."""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.ingest import ReadOptions, dcgm, ingest
from warehouse.ingest.promblock import BlockParser
from warehouse.ingest.textblocks import blocks
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster, write_formats

T0 = datetime.fromtimestamp(1_700_000_000, UTC)  # 1700000000000 ms on the lines below
MTIME = datetime(2025, 1, 10, 18, 0, tzinfo=UTC)

# Line numbers matter: the rejects are checked by number.
CORNERS = "\n".join(
    [
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",  # 1
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",  # 2
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",device="nvidia0",'
        'modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 87 1700000000000',  # 3
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",modelName="NVIDIA A100-SXM4-40GB",'
        'Hostname="n1",pod="train-0",namespace="ml",container="main"} 42',  # 4: file time
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",modelName="NVIDIA H100 NVL",'
        'Hostname="n1"} NaN 1700000000000',  # 5
        'DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-b",Hostname="n1"} +Inf 1700000000000',  # 6
        'DCGM_FI_DEV_POWER_USAGE{gpu="2",UUID="GPU-c",Hostname="n1",} -Inf 1700000000000',  # 7
        "",  # 8
        "   # an indented comment that is neither HELP nor TYPE",  # 9
        'DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a",GPU_I_PROFILE="1g.10gb",GPU_I_ID="3",'
        'Hostname="n1",modelName="Mystery GPU 9000"} 0.25 1700000000000',  # 10: MIG
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",Hostname="n1",'
        r'note="a \"quoted\" {brace}, comma\\ and\nnewline"}  1.5e3   1700000000000',  # 11
        "node_load1 0.5 1700000000000",  # 12: no labels, so no Hostname
        'DCGM_FI_DEV_GPU_TEMP{gpu="3",UUID="GPU-d"} 40 1700000000000',  # 13: no Hostname
        "this is not a sample",  # 14
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n1"} forty 1700000000000',  # 15
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n1" 41',  # 16
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname=n1} 41',  # 17
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n1"} 41 1700000000000 7',  # 18
        'DCGM_FI_DEV_GPU_TEMP{gpu="x7",Hostname="n1"} 41 1700000000000\r',  # 19: CRLF
    ]
)


def write(tmp_path: Path, text: str | bytes, name: str = "scrape.prom") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    os.utime(path, (MTIME.timestamp(), MTIME.timestamp()))
    return path


def rows(eng: Engine, where: str = "true") -> list[tuple[Any, ...]]:
    """gpu_metrics rows, the JSON labels decoded."""
    found = eng.con.sql(
        "SELECT ts, host, gpu, uuid, model, metric, value, labels FROM gpu_metrics "
        f"WHERE {where} ORDER BY metric, host, gpu, uuid, ts"
    ).fetchall()
    return [(*r[:7], None if r[7] is None else json.loads(r[7])) for r in found]


def rejects(eng: Engine) -> list[tuple[Any, ...]]:
    return eng.con.sql(
        "SELECT line, field, raw, reason FROM wanka.ingest_rejects ORDER BY line"
    ).fetchall()


def test_every_quirk_lands_where_it_belongs(eng: Engine, tmp_path: Path) -> None:
    [result] = ingest(eng, "dcgm", [str(write(tmp_path, CORNERS))])
    assert result.rows == {"gpu_metrics": 8} and result.rejected == 7
    util = {r[2]: r for r in rows(eng, "metric = 'DCGM_FI_DEV_GPU_UTIL'")}
    assert util[0][:7] == (T0, "n1", 0, "GPU-a", "H100", "DCGM_FI_DEV_GPU_UTIL", 87.0)
    assert util[0][7] == {"device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3"}
    # No timestamp on the line: the file's modification time. Pod labels are kept.
    assert util[1][:5] == (MTIME, "n1", 1, "GPU-b", "A100")
    pod = {"pod": "train-0", "namespace": "ml", "container": "main"}
    assert util[1][7] == {"modelName": "NVIDIA A100-SXM4-40GB", **pod}
    power = {r[2]: r for r in rows(eng, "metric = 'DCGM_FI_DEV_POWER_USAGE'")}
    assert math.isnan(power[0][6]) and power[0][4] == "H100"
    assert power[1][6] == math.inf and power[1][4] is None and power[1][7] is None
    assert power[2][6] == -math.inf and power[2][3] == "GPU-c"
    [mig] = rows(eng, "metric = 'DCGM_FI_PROF_SM_ACTIVE'")
    assert mig[4] == "Mystery GPU 9000" and mig[6] == 0.25
    assert mig[7] == {"GPU_I_PROFILE": "1g.10gb", "GPU_I_ID": "3", "modelName": "Mystery GPU 9000"}
    [fb] = rows(eng, "metric = 'DCGM_FI_DEV_FB_USED'")
    assert fb[6] == 1500.0 and fb[7] == {"note": 'a "quoted" {brace}, comma\\ and\nnewline'}
    [temp] = rows(eng, "metric = 'DCGM_FI_DEV_GPU_TEMP'")
    assert temp[2] is None and temp[7] == {"gpu": "x7"} and temp[6] == 41.0  # gpu not a number
    found = rejects(eng)
    assert [r[0] for r in found] == [12, 13, 14, 15, 16, 17, 18]
    by_line = {r[0]: r for r in found}
    lines = CORNERS.split("\n")
    for number in (12, 13, 14, 15, 16, 17, 18):
        assert by_line[number][2] == lines[number - 1]
    assert "Hostname" in by_line[12][3] and "Hostname" in by_line[13][3]
    assert "expected a value" in by_line[14][3] and "found 'forty" in by_line[15][3]
    assert "'}'" in by_line[16][3] and 'name="value"' in by_line[17][3]
    assert "'41 1700000000000 7'" in by_line[18][3]


def test_host_option_names_the_host_of_lines_without_one(eng: Engine, tmp_path: Path) -> None:
    [result] = ingest(eng, "dcgm", [str(write(tmp_path, CORNERS))], ReadOptions(host="h9"))
    assert result.rows == {"gpu_metrics": 10}
    assert [r[0] for r in rejects(eng)] == [14, 15, 16, 17, 18]
    [load] = rows(eng, "metric = 'node_load1'")
    assert load[1:4] == ("h9", None, None) and load[6] == 0.5 and load[7] is None
    assert rows(eng, "uuid = 'GPU-d'")[0][1] == "h9"
    assert rows(eng, "uuid = 'GPU-a'")[0][1] == "n1"  # a Hostname label wins over --host


def test_at_option_overrides_line_timestamps(eng: Engine, tmp_path: Path) -> None:
    at = datetime(2024, 2, 29, 12, 30, 15, 250_000, tzinfo=UTC)
    ingest(eng, "dcgm", [str(write(tmp_path, CORNERS))], ReadOptions(at=at))
    assert eng.con.sql("SELECT DISTINCT ts FROM gpu_metrics").fetchall() == [(at,)]


def test_nothing_readable_is_an_error_and_stores_nothing(eng: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, "hello world\nthis is { not } prometheus\n", "junk.prom")
    with pytest.raises(UserError, match=r"junk.prom: nothing could be read as DCGM exporter"):
        ingest(eng, "dcgm", [str(path)])
    assert eng.con.sql("SELECT count(*) FROM gpu_metrics").fetchall() == [(0,)]
    assert eng.con.sql("SELECT count(*) FROM wanka.ingest_batches").fetchall() == [(0,)]
    assert eng.con.sql("SELECT count(*) FROM wanka.ingest_rejects").fetchall() == [(0,)]


def test_gzip_bom_and_tiny_blocks_give_the_same_rows(
    eng: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warehouses: Warehouses
) -> None:
    ingest(eng, "dcgm", [str(write(tmp_path, CORNERS))])
    expected, expected_rejects = rows(eng), rejects(eng)
    monkeypatch.setattr(dcgm, "BLOCK_BYTES", 40)  # shorter than most lines: buffers grow
    zipped = write(tmp_path, gzip.compress(b"\xef\xbb\xbf" + CORNERS.encode()), "scrape.prom.gz")
    with Engine(str(warehouses.empty(tmp_path / "other.duckdb"))) as other:
        [result] = ingest(other, "dcgm", [str(zipped)])
        assert result.total_rows == 8
        assert _same(rows(other), expected) and rejects(other) == expected_rejects


def _same(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    """Row lists equal, NaN equal to NaN."""

    def key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in row)

    return [key(r) for r in a] == [key(r) for r in b]


def test_bad_utf8_is_replaced_not_fatal(eng: Engine, tmp_path: Path) -> None:
    text = (
        b'm{Hostname="h\xff",gpu="0"} 1 1700000000000\nm{Hostname="ok",gpu="1"} 2 1700000000000\n'
    )
    [result] = ingest(eng, "dcgm", [str(write(tmp_path, text))])
    assert result.total_rows == 2
    assert sorted(r[1] for r in rows(eng)) == ["h\ufffd", "ok"]


def test_simulator_output_round_trips(eng: Engine, tmp_path: Path) -> None:
    cluster = simulate_cluster(SimConfig(gpus=16, hours=0.1, warmup_hours=6.0, seed=5))
    files = write_formats(cluster, tmp_path / "sim", max_rows=600)
    assert len(files["dcgm"]) > 1
    results = ingest(eng, "dcgm", [str(tmp_path / "sim" / "dcgm")])
    assert sum(r.total_rows for r in results) == cluster.sample_count
    assert sum(r.rejected for r in results) == 0
    expected = pa.Table.from_batches(list(cluster.telemetry_batches()))
    eng.con.register("expected", expected)
    sums = "SELECT metric::VARCHAR AS metric, count(*), sum(value) FROM {} GROUP BY 1 ORDER BY 1"
    ours, theirs = (eng.con.sql(sums.format(t)).fetchall() for t in ("gpu_metrics", "expected"))
    assert [r[:2] for r in ours] == [r[:2] for r in theirs]
    assert all(a[2] == pytest.approx(b[2], rel=1e-12) for a, b in zip(ours, theirs, strict=True))
    # Sample for sample: same time, GPU and metric, same value, same host and model.
    matched = eng.con.sql(
        "SELECT count(*) FROM gpu_metrics g JOIN expected e ON g.ts = e.ts "
        "AND g.uuid = e.uuid::VARCHAR AND g.metric = e.metric::VARCHAR AND g.value = e.value "
        "AND g.host = e.host::VARCHAR "
        "AND g.gpu = e.gpu AND g.model = e.model::VARCHAR"
    ).fetchall()[0][0]
    assert matched == cluster.sample_count
    models = {m for (m,) in eng.con.sql("SELECT DISTINCT model FROM gpu_metrics").fetchall()}
    known = {m for (m,) in eng.con.sql("SELECT model FROM gpu_models").fetchall()}
    assert models and models <= known
    # Pod labels the simulator attached survive, beside the exporter's own labels.
    missing = eng.con.sql(
        "SELECT count(*) FROM expected e JOIN gpu_metrics g ON g.ts = e.ts "
        "AND g.uuid = e.uuid::VARCHAR AND g.metric = e.metric::VARCHAR "
        "WHERE e.labels IS NOT NULL AND g.labels->>'pod' IS DISTINCT FROM e.labels->>'pod'"
    ).fetchall()[0][0]
    assert missing == 0


def test_rows_cast_to_the_ddl(eng: Engine, tmp_path: Path) -> None:
    from warehouse.ingest.base import Source
    from warehouse.ingest.batch import read_context

    context = read_context(eng)
    path = write(tmp_path, CORNERS)
    with path.open("rb") as stream:
        chunks = list(dcgm.read(stream, Source(str(path), path, MTIME), ReadOptions(), context))
    target = context.schema("gpu_metrics")
    for chunk in chunks:
        # Label columns are dictionaries over the file's label sets: decoded, they are the DDL's.
        plain = pa.table(
            [
                pa.chunked_array([k.dictionary_decode() for k in c.chunks], c.type.value_type)
                if pa.types.is_dictionary(c.type)
                else c
                for c in chunk.rows.columns
            ],
            names=chunk.rows.column_names,
        )
        wanted = pa.schema([target.field(n) for n in plain.column_names])
        assert plain.cast(wanted).num_rows == chunk.rows.num_rows


def test_line_numbers_count_across_blocks() -> None:
    text = "".join(f'm{{Hostname="h",gpu="{i}"}} {i}\n' for i in range(50)) + "junk\n"
    parser = BlockParser(lambda labels: 0)
    found = [r.line for b in blocks(io.BytesIO(text.encode()), 64) for r in parser.parse(b).rejects]
    assert found == [51]
