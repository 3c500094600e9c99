"""A real Prometheus 2.42 and wanka evaluate the same rule group over the same samples, and
store the same series: the recording rule's, `ALERTS` and `ALERTS_FOR_STATE`, with the same
values at every evaluation time Prometheus chose.

Prometheus receives the samples over remote_write and evaluates the group every second at its
own times. Its evaluation times are the timestamps of its recorded series. wanka's GroupRunner
then evaluates at exactly those times. Every sample is written before the first time compared,
and the alerts' conditions are false before it, so both start from the same (empty) state.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import cramjam
import httpx
import pytest

from tests.service.http.test_serve_process import came_up
from tests.service.serve.alertmanager import free_port
from warehouse.remote_write.messages import WriteRequest
from warehouse.rules import rulefile
from warehouse.rules.group import GroupRunner
from warehouse.rules.store import Store, labels_of
from warehouse.rules.testrun import scratch_engine

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="no prometheus binary"),
]

RULES = """\
groups:
  - name: oracle
    interval: 1s
    rules:
      - record: host:gpu_temp:max
        expr: max by (Hostname) (gpu_temp)
      - alert: HostHot
        expr: host:gpu_temp:max > 80
        for: 3s
        labels: {severity: page}
        annotations: {summary: '{{ $labels.Hostname }} at {{ $value }}'}
      - alert: GpuVeryHot
        expr: gpu_temp > 90
"""
Sample = tuple[tuple[tuple[str, str], ...], int, float]


def temperature(host: str, gpu: int, offset_s: int) -> float:
    """n1 runs hot from 1 s to 6 s after the start (long enough to fire), n2 for 1 s (only
    pending), n1's GPU 1 past 90 for 2 s; all cool before the start."""
    if host == "n1" and 1 <= offset_s < 6:
        return 95.0 if gpu == 1 and offset_s < 3 else 85.0 + gpu
    if host == "n2" and offset_s == 3:
        return 82.0
    return 60.0 + gpu


def samples(start_s: int) -> list[Sample]:
    return [
        (labels_of({"__name__": "gpu_temp", "Hostname": h, "gpu": str(g)}), t * 1000,
         temperature(h, g, t - start_s))
        for h in ("n1", "n2") for g in (0, 1) for t in range(start_s - 60, start_s + 16)
    ]  # fmt: skip


def remote_write(url: str, rows: list[Sample]) -> None:
    request = WriteRequest()
    by_series: dict[tuple[tuple[str, str], ...], list[tuple[int, float]]] = {}
    for labels, ts, value in rows:
        by_series.setdefault(labels, []).append((ts, value))
    for labels, points in by_series.items():
        entry = request.timeseries.add()
        for name, text in labels:
            entry.labels.add(name=name, value=text)
        for ts, number in sorted(points):
            entry.samples.add(timestamp=ts, value=number)
    body = cramjam.snappy.compress_raw(request.SerializeToString())
    answer = httpx.post(
        f"{url}/api/v1/write", content=bytes(body), timeout=30,
        headers={"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"},
    )  # fmt: skip
    assert answer.status_code == 204, answer.text


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "rules.yml").write_text(RULES)
    (tmp_path / "prometheus.yml").write_text(
        f"global: {{scrape_interval: 1h}}\nrule_files: [{tmp_path / 'rules.yml'}]\n"
    )
    port = free_port()
    process = subprocess.Popen(
        ["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
         "--web.enable-remote-write-receiver", "--log.level=warn"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        assert came_up(process, f"{url}/-/ready"), "no Prometheus"
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def raw(url: str, expression: str, at_s: float) -> set[Sample]:
    data = httpx.get(
        f"{url}/api/v1/query", params={"query": expression, "time": str(at_s)}, timeout=30
    ).json()["data"]["result"]
    return {
        (labels_of(entry["metric"]), round(float(t) * 1000), float(v))
        for entry in data
        for t, v in entry["values"]
    }


def test_wanka_stores_what_prometheus_stores_at_every_evaluation(prometheus: str) -> None:
    start_s = int(time.time()) + 2
    rows = samples(start_s)
    remote_write(prometheus, rows)
    assert time.time() < start_s, "the samples must be in before the first time compared"
    time.sleep(max(0.0, start_s + 9 - time.time()))  # Prometheus evaluates on its own clock
    end_s = start_s + 8
    theirs = {
        name: {s for s in raw(prometheus, f"{name}[20s]", end_s) if s[1] >= start_s * 1000}
        for name in ("host:gpu_temp:max", "ALERTS", "ALERTS_FOR_STATE")
    }
    times = sorted({ts for _, ts, _ in theirs["host:gpu_temp:max"]})
    assert len(times) >= 7  # one evaluation a second
    with scratch_engine() as engine:
        store = Store(engine.cursor())
        store.write(rows)
        [group] = rulefile.parse_text(RULES, "rules.yml")
        runner = GroupRunner(group)
        for alerting in runner.alerting.values():
            alerting.restored = True  # Prometheus restored its (empty) state long before
        for ts in times:
            runner.evaluate(store, ts)
        ours = {
            name: {s for s in raw_wanka(store, name) if times[0] <= s[1] <= times[-1]}
            for name in theirs
        }
    assert any(dict(s[0]).get("alertstate") == "firing" for s in theirs["ALERTS"])
    assert any(dict(s[0]).get("alertstate") == "pending" for s in theirs["ALERTS"])
    for name in theirs:
        assert ours[name] == {s for s in theirs[name] if s[1] <= times[-1]}, name


def raw_wanka(store: Store, metric: str) -> set[Sample]:
    rows = store.cursor.execute(
        "SELECT labels, epoch_ms(ts), value FROM prom_samples WHERE metric = ?", [metric]
    ).fetchall()
    return {
        (labels_of({"__name__": metric, **json.loads(text or "{}")}), int(ts), float(value))
        for text, ts, value in rows
    }
