"""The scrape labels of simulated telemetry: each series is what Prometheus stores when it
scrapes dcgm-exporter, and goes into gpu_metrics exactly as remote write would put it."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from warehouse.ingest.models import ModelNames
from warehouse.remote_write.labels import gpu_columns, rebuild
from warehouse.simulate import SimConfig, SimulatedCluster, simulate_cluster
from warehouse.simulate import write_formats as write
from warehouse.simulate.scrape_labels import SCRAPE_JOB, SCRAPE_KEYS

LABEL = re.compile(r'(\w+)="([^"]*)"')
#: Every cluster gets a host (one each), the Kubernetes one included.
TINY = SimConfig(gpus=64, hours=0.25, interval_s=60.0, seed=11, warmup_hours=12.0)
INSTANCE = re.compile(r"10\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}:9400")


@pytest.fixture(scope="module")
def tiny() -> SimulatedCluster:
    return simulate_cluster(TINY)


def _series(table: pa.Table) -> list[tuple[str, str, int, str, str, str | None]]:
    """The distinct (metric, host, gpu, uuid, model, labels) of decoded telemetry rows."""
    names = ["metric", "host", "gpu", "uuid", "model", "labels"]
    distinct = table.select(names).group_by(names).aggregate([])
    return [tuple(row[n] for n in names) for row in distinct.to_pylist()]


def _decoded(batch: pa.RecordBatch) -> pa.Table:
    """A batch with its dictionary columns as plain strings."""
    table = pa.Table.from_batches([batch])
    columns = [
        c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns
    ]
    return pa.table(columns, names=table.column_names)


def test_series_rebuild_to_the_exporter_text_plus_the_target(
    tiny: SimulatedCluster, tmp_path: Path
) -> None:
    files = write(tiny, tmp_path, max_rows=20_000, kinds=("dcgm", "parquet"))
    text = files["dcgm"][0].read_text()
    exported = {
        frozenset({"__name__": line.split("{", 1)[0], **dict(LABEL.findall(line))}.items())
        for line in text.splitlines()
        if not line.startswith("#")
    }
    rows = _decoded(next(tiny.telemetry_batches(max_rows=20_000)))
    scraped: set[frozenset[tuple[str, str]]] = set()
    instances: dict[str, str] = {}
    for metric, host, gpu, uuid, _, labels in _series(rows):
        got = rebuild(metric, host, gpu, uuid, labels)
        assert got.pop("job") == SCRAPE_JOB and INSTANCE.fullmatch(got["instance"])
        assert instances.setdefault(host, got["instance"]) == got.pop("instance")
        scraped.add(frozenset(got.items()))
    # Without the target's labels, a stored series is exactly a series of the exporter's text.
    assert scraped == exported
    # One target per reporting host, each its own address.
    reporting = len(set(tiny.telemetry.col_host.tolist()))
    assert len(set(instances.values())) == len(instances) == reporting


def test_remote_write_of_the_series_stores_the_same_columns(tiny: SimulatedCluster) -> None:
    plan = tiny.telemetry
    models = ModelNames(dict(zip(plan.full_names, plan.model_names.to_pylist(), strict=True)))
    rows = _decoded(next(tiny.telemetry_batches(max_rows=20_000)))
    for metric, host, gpu, uuid, model, labels in _series(rows):
        sent = rebuild(metric, host, gpu, uuid, labels)
        del sent["__name__"]
        assert gpu_columns(sent, models) == (host, gpu, uuid, model, labels)
        assert labels is not None and list(json.loads(labels)) == sorted(json.loads(labels))


def test_without_exporter_labels_only_the_job_labels_remain(tiny: SimulatedCluster) -> None:
    other = simulate_cluster(replace(TINY, exporter_labels=False))
    ours = pa.Table.from_batches(list(tiny.telemetry_batches()))
    theirs = pa.Table.from_batches(list(other.telemetry_batches()))
    assert theirs.drop_columns(["labels"]).equals(ours.drop_columns(["labels"]))
    for mine, bare in zip(ours["labels"].to_pylist(), theirs["labels"].to_pylist(), strict=True):
        job = {k: v for k, v in json.loads(mine).items() if k not in SCRAPE_KEYS}
        assert (json.loads(bare) if bare is not None else {}) == job
    assert theirs["labels"].null_count > 0


def test_exporter_labels_is_checked() -> None:
    with pytest.raises(ValueError, match="exporter_labels must be true or false"):
        SimConfig(exporter_labels="yes")  # type: ignore[arg-type]
    assert SimConfig().exporter_labels is True
