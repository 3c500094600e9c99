"""bench_storage's stores outside DuckDB: the same samples as sorted Parquet, in a Prometheus
TSDB built by `promtool tsdb create-blocks-from openmetrics`, and in a VictoriaMetrics
single-node server fed through `/api/v1/import/prometheus`.

Prometheus and VictoriaMetrics get every sample as a text line whose labels are all of the
sample's series labels: the metric name, `gpu`, `UUID`, `Hostname` and every key of the labels
JSON (`modelName` from the model column where the JSON has none), so that they hold the same
series as wanka.gpu_series.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from storage_samples import Stored, batches  # bench/ is the script's folder on sys.path

from warehouse.simulate.cluster import SimulatedCluster
from warehouse.tsdb.relations import HOT, SERIES

# --- sorted Parquet -------------------------------------------------------------------------


def store_parquet(folder: Path, cur: duckdb.DuckDBPyConnection) -> Stored:
    """The samples of wanka's hot table as sorted Parquet: `samples.parquet` (series_id, ts,
    value) ordered by metric, series, ts — ids and timestamps DELTA_BINARY_PACKED, values PLAIN,
    all zstd (level 3) — beside `series.parquet`, the series dictionary (zstd, dictionary
    encoding). Read metric by metric, so each sort is one metric's samples."""
    out = Stored()
    samples_path, series_path = folder / "samples.parquet", folder / "series.parquet"
    schema = pa.schema(
        [("series_id", pa.int32()), ("ts", pa.timestamp("us", tz="UTC")), ("value", pa.float64())]
    )
    started = time.perf_counter()
    writer = pq.ParquetWriter(
        samples_path,
        schema,
        compression="zstd",
        compression_level=3,
        use_dictionary=False,
        column_encoding={"series_id": "DELTA_BINARY_PACKED", "ts": "DELTA_BINARY_PACKED"},
    )
    try:
        found = cur.execute(f"SELECT DISTINCT metric FROM {SERIES} ORDER BY 1").fetchall()
        metrics = [m for (m,) in found]
        for metric in metrics:
            reader = cur.sql(
                f"SELECT s.series_id, s.ts, s.value FROM {HOT} s "
                f"JOIN {SERIES} r ON r.series_id = s.series_id WHERE r.metric = $metric "
                "ORDER BY s.series_id, s.ts",
                params={"metric": metric},
            ).to_arrow_reader(1 << 20)
            for batch in reader:
                writer.write_table(pa.Table.from_batches([batch]).cast(schema))
                out.samples += batch.num_rows
    finally:
        writer.close()
    series = cur.sql(f"SELECT * FROM {SERIES} ORDER BY series_id").to_arrow_table()
    pq.write_table(series, series_path, compression="zstd", compression_level=3)
    out.seconds = time.perf_counter() - started
    out.parts = {"samples": samples_path.stat().st_size, "series": series_path.stat().st_size}
    out.bytes = sum(out.parts.values())
    samples_path.unlink()
    series_path.unlink()
    return out


# --- text exposition ------------------------------------------------------------------------


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _label_text(labels: str | None, model: str | None) -> str:
    """One labels-JSON value as `,key="value"...` (modelName from the model column if absent)."""
    found = json.loads(labels) if labels else {}
    if "modelName" not in found and model is not None:
        found["modelName"] = model
    return "".join(f',{k}="{_escape(str(v))}"' for k, v in sorted(found.items()))


def _strings(column: pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks().cast(pa.string())


def exposition(table: pa.Table, *, openmetrics: bool) -> pa.Array:
    """Each sample of a simulator batch as one line of text exposition:
    `metric{gpu="0",UUID="...",Hostname="...",<labels JSON>} value timestamp\\n` — the timestamp in
    seconds for OpenMetrics (promtool), in milliseconds for the Prometheus text format
    (VictoriaMetrics' /api/v1/import/prometheus)."""
    labels = table["labels"].combine_chunks()
    if isinstance(labels, pa.DictionaryArray) and all(
        '"modelName"' in d for d in labels.dictionary.to_pylist() if d is not None
    ):  # the simulator's: each distinct label set formatted once
        texts = pa.array([_label_text(d, None) for d in labels.dictionary.to_pylist()])
        extra = pc.take(texts, labels.indices)
    else:
        extra = pa.array(
            [
                _label_text(lab, mod)
                for lab, mod in zip(
                    _strings(table["labels"]).to_pylist(),
                    _strings(table["model"]).to_pylist(),
                    strict=True,
                )
            ],
            pa.string(),
        )
    ts_ms = pc.divide(pc.cast(table["ts"].combine_chunks(), pa.int64()), 1000)
    stamp = (
        pc.cast(pc.divide(pc.cast(ts_ms, pa.float64()), 1000.0), pa.string())
        if openmetrics
        else pc.cast(ts_ms, pa.string())
    )
    parts = [
        _strings(table["metric"]),
        pa.scalar('{gpu="'),
        pc.cast(table["gpu"].combine_chunks(), pa.string()),
        pa.scalar('",UUID="'),
        _strings(table["uuid"]),
        pa.scalar('",Hostname="'),
        _strings(table["host"]),
        pa.scalar('"'),
        extra,
        pa.scalar("} "),
        pc.cast(table["value"].combine_chunks(), pa.string()),
        pa.scalar(" "),
        stamp,
        pa.scalar("\n"),
    ]
    return pc.binary_join_element_wise(*parts, "")


def text(lines: pa.Array) -> bytes:
    """Lines of `exposition` (each ending in a newline) as one text: their string data."""
    if not len(lines):
        return b""
    offsets = pa.Array.from_buffers(
        pa.int32(), len(lines) + 1, [None, lines.buffers()[1]], offset=lines.offset
    )
    first, last = offsets[0].as_py(), offsets[len(lines)].as_py()
    return bytes(lines.buffers()[2].to_pybytes()[first:last])


# --- Prometheus ------------------------------------------------------------------------------


def write_openmetrics(cluster: SimulatedCluster, path: Path) -> int:
    """Every sample as OpenMetrics text, one metric family after another (as the format asks)."""
    families: dict[str, Path] = {}
    handles = {}
    count = 0
    for table in batches(cluster):
        lines = exposition(table, openmetrics=True)
        metric = _strings(table["metric"])
        for name in pc.unique(metric).to_pylist():
            part = pc.filter(lines, pc.equal(metric, name))
            if name not in handles:
                families[name] = path.with_suffix(f".{len(families)}.part")
                handles[name] = families[name].open("wb")
            handles[name].write(text(part))
            count += len(part)
    for handle in handles.values():
        handle.close()
    with path.open("w") as out:
        for name, part_path in families.items():
            out.write(f"# TYPE {name} gauge\n")
            with part_path.open() as src:
                shutil.copyfileobj(src, out)
            part_path.unlink()
        out.write("# EOF\n")
    return count


def _size(paths: Iterator[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file() and not p.is_symlink())


def store_prometheus(folder: Path, cluster: SimulatedCluster, block: str) -> Stored:
    promtool = shutil.which("promtool")
    if promtool is None:
        return Stored(note="promtool missing: apt-get install prometheus")
    text = folder / "samples.om"
    out = Stored()
    out.samples = write_openmetrics(cluster, text)
    tsdb = folder / "tsdb"
    started = time.perf_counter()
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", f"--max-block-duration={block}",
         str(text), str(tsdb)],
        capture_output=True, text=True,
    )  # fmt: skip
    out.seconds = time.perf_counter() - started
    text.unlink()
    if done.returncode != 0:
        out.note = f"promtool failed: {done.stderr.strip()[-200:]}"
        return out
    blocks = [b for b in tsdb.iterdir() if b.is_dir() and (b / "meta.json").exists()]
    chunks = sum(_size((b / "chunks").rglob("*")) for b in blocks)
    index = sum((b / "index").stat().st_size for b in blocks)
    out.bytes = _size(tsdb.rglob("*"))
    out.parts = {"chunks": chunks, "index": index, "other": out.bytes - chunks - index}
    out.note = f"{len(blocks)} blocks"
    shutil.rmtree(tsdb)
    return out


# --- VictoriaMetrics ---------------------------------------------------------------------------

VM_PACKAGE = "victoria-metrics"  # Debian's single-node server (1.79.5 in trixie)


def _victoria_binary() -> tuple[str | None, str]:
    """The victoria-metrics binary, installed from Debian when missing and possible."""
    found = shutil.which("victoria-metrics")
    if found:
        return found, ""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None, "victoria-metrics missing (apt-get install victoria-metrics)"
    done = subprocess.run(
        ["apt-get", "install", "-y", VM_PACKAGE], capture_output=True, text=True, timeout=600
    )
    found = shutil.which("victoria-metrics")
    if found is None:
        return None, f"apt-get install victoria-metrics failed: {done.stderr.strip()[-160:]}"
    return found, ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Victoria:
    """A victoria-metrics server on a loopback port with its own data folder, for one size."""

    def __init__(self, binary: str, data: Path) -> None:
        self.data = data
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = (data.parent / "victoria.log").open("w")
        self.proc = subprocess.Popen(
            [binary, f"-storageDataPath={data}", f"-httpListenAddr=127.0.0.1:{self.port}",
             "-retentionPeriod=100y", "-search.disableCache", "-loggerLevel=WARN"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                if self.get("/health").strip() == "OK":
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"victoria-metrics did not start (see {self.log.name})")
            time.sleep(0.2)

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.base + path, timeout=600) as reply:
            return str(reply.read().decode())

    def post(self, path: str, body: bytes) -> None:
        request = urllib.request.Request(self.base + path, data=body, method="POST")
        with urllib.request.urlopen(request, timeout=600) as reply:
            reply.read()

    def metric(self, name: str, labels: str = "") -> float:
        """The sum of a metric of /metrics over its labels (those starting with `labels`)."""
        total = 0.0
        for line in self.get("/metrics").splitlines():
            if line.startswith(name + "{" + labels) or (not labels and line.startswith(name + " ")):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def settle(self, limit_s: float = 900.0) -> float:
        """Flush, force a merge of every partition, and wait until no merge runs and the data
        folder's size has not changed for three polls 2 s apart; the seconds it took."""
        started = time.perf_counter()
        self.get("/internal/force_flush")
        self.get("/internal/force_merge")
        sizes: list[int] = []
        while time.perf_counter() - started < limit_s:
            time.sleep(2)
            sizes.append(_size(self.data.rglob("*")))
            busy = self.metric("vm_active_merges") + self.metric("vm_active_force_merges")
            if not busy and len(sizes) >= 3 and len(set(sizes[-3:])) == 1:
                break
        return time.perf_counter() - started

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def store_victoria(folder: Path, cluster: SimulatedCluster) -> Stored:
    """Every sample through /api/v1/import/prometheus (text with ms timestamps, one POST per
    simulator batch), then force_flush and force_merge; bytes of data/ and indexdb/ apart.
    `seconds` is the time of the POSTs and the flush (not of making the text)."""
    binary, why = _victoria_binary()
    if binary is None:
        return Stored(note=why)
    out = Stored()
    data = Path(tempfile.mkdtemp(prefix="victoria-", dir=folder))
    server = Victoria(binary, data)
    try:
        for table in batches(cluster):
            body = text(exposition(table, openmetrics=False))
            started = time.perf_counter()
            server.post("/api/v1/import/prometheus", body)
            out.seconds += time.perf_counter() - started
            out.samples += table.num_rows
        started = time.perf_counter()
        server.get("/internal/force_flush")
        out.seconds += time.perf_counter() - started
        settle = server.settle()
        stored = server.metric("vm_rows", 'type="storage/')
        out.parts = {
            "data": _size((data / "data").rglob("*")),
            "indexdb": _size((data / "indexdb").rglob("*")),
        }
        out.bytes = sum(out.parts.values())
        whole = _size(data.rglob("*"))
        out.note = f"merges settled in {settle:.0f} s; folder {whole / out.samples:.2f} B/sample"
        if int(stored) != out.samples:
            out.note += f"; holds {int(stored):,} rows"
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
    return out
