"""A real Prometheus 2.42 scrapes a simulated dcgm-exporter and remote_writes to a real
`wanka serve`: every sample Prometheus holds is in wanka exactly once, labels included, also
after wanka is killed with SIGKILL mid-stream and restarted (Prometheus retries what it could
not deliver).

Prometheus is Debian's package (`.ci/run` installs it); the test is skipped without it.
"""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import invoke_wanka
from tests.exporter import Exporter
from tests.service.serve.test_server_faults import PW, free_port, query, serving
from tests.warehouses import Warehouses
from warehouse.remote_write.labels import rebuild

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None, reason="no prometheus binary"),
]
WRITER = "wes"
#: One sample: its labels (sorted pairs) and timestamp in ms.
Key = tuple[tuple[tuple[str, str], ...], int]


@pytest.fixture
def db(tmp_path: Path, warehouses: Warehouses) -> Path:
    path = warehouses.empty(tmp_path / "feed.duckdb", shipped=True)
    for name, role in (("ada", "admin"), (WRITER, "writer")):
        added = invoke_wanka(
            "--db", str(path), "user", "add", name, "--role", role, "--password-stdin", input=PW
        )
        assert added.returncode == 0, added.stderr
    return path


@contextmanager
def prometheus(folder: Path, target: str, write_port: int) -> Iterator[httpx.Client]:
    """Prometheus scraping `target` every second and remote_writing to wanka on `write_port`."""
    port = free_port()
    config = folder / "prometheus.yml"
    config.write_text(
        json.dumps(
            {
                "global": {"scrape_interval": "1s", "scrape_timeout": "900ms"},
                "scrape_configs": [{"job_name": "dcgm", "static_configs": [{"targets": [target]}]}],
                "remote_write": [
                    {
                        "url": f"http://127.0.0.1:{write_port}/api/v1/write",
                        "basic_auth": {"username": WRITER, "password": PW},
                        "remote_timeout": "5s",
                        "queue_config": {
                            "batch_send_deadline": "200ms",
                            "max_samples_per_send": 50,
                            "min_backoff": "50ms",
                            "max_backoff": "500ms",
                        },
                    }
                ],
            }
        )
    )
    log = (folder / "prometheus.log").open("wb")
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={folder / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    try:
        wait_for(lambda: _ready(client), 60, "prometheus did not start")
        yield client
    finally:
        client.close()
        process.terminate()  # it flushes its queue first, for up to a minute when wanka is gone
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()


def _ready(client: httpx.Client) -> bool:
    try:
        return client.get("/-/ready").status_code == 200
    except httpx.TransportError:
        return False


def wait_for(condition: object, seconds: float, why: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, why
        time.sleep(0.2)  # polling a condition, not timing anything


def held_by_prometheus(client: httpx.Client, at_s: float) -> Counter[Key]:
    """Every raw sample Prometheus holds up to `at_s`, through its own query API."""
    answer = client.get("/api/v1/query", params={"query": '{__name__=~".+"}[1h]', "time": at_s})
    assert answer.status_code == 200, answer.text
    held: Counter[Key] = Counter()
    for series in answer.json()["data"]["result"]:
        labels = tuple(sorted(series["metric"].items()))
        for ts, text in series["values"]:
            held[(labels, round(float(ts) * 1000))] += 1
            assert not math.isnan(float(text))
    return held


def held_by_wanka(client: httpx.Client, at_ms: int) -> tuple[Counter[Key], dict[Key, float]]:
    """Every sample wanka stored up to `at_ms`, with labels rebuilt from its columns."""
    rows: list[Any] = query(
        client,
        "SELECT metric, host, gpu, uuid, labels::VARCHAR, epoch_ms(ts), value FROM gpu_metrics "
        f"WHERE epoch_ms(ts) <= {at_ms} UNION ALL "
        "SELECT metric, NULL, NULL, NULL, labels::VARCHAR, epoch_ms(ts), value FROM prom_samples "
        f"WHERE epoch_ms(ts) <= {at_ms}",
    )
    held: Counter[Key] = Counter()
    values: dict[Key, float] = {}
    for metric, host, gpu, uuid, labels, ts, number in rows:
        key = (tuple(sorted(rebuild(metric, host, gpu, uuid, labels).items())), int(ts))
        held[key] += 1
        values[key] = number
    return held, values


def prometheus_values(client: httpx.Client, at_s: float) -> dict[Key, float]:
    answer = client.get("/api/v1/query", params={"query": '{__name__=~".+"}[1h]', "time": at_s})
    return {
        (tuple(sorted(s["metric"].items())), round(float(ts) * 1000)): float(text)
        for s in answer.json()["data"]["result"]
        for ts, text in s["values"]
    }


def same_as_prometheus(prom: httpx.Client, wanka: httpx.Client, seconds: float) -> int:
    """Wait until wanka holds exactly what Prometheus holds up to a moment `seconds` ago;
    the number of samples compared."""
    at_s = time.time() - seconds
    want = held_by_prometheus(prom, at_s)
    assert want and max(want.values()) == 1
    got: Counter[Key] = Counter()

    def caught_up() -> bool:
        nonlocal got
        got = held_by_wanka(wanka, int(at_s * 1000))[0]
        return set(got) >= set(want)

    wait_for(caught_up, 60, f"wanka is missing {len(set(want) - set(got))} samples")
    assert got == want, (
        f"{len(set(got) - set(want))} samples Prometheus does not hold, "
        f"{sum(n - 1 for n in got.values())} doubled"
    )
    values = held_by_wanka(wanka, int(at_s * 1000))[1]
    expected = prometheus_values(prom, at_s)
    assert all(values[k] == expected[k] for k in want)
    return len(want)


def test_every_sample_prometheus_holds_is_in_wanka_once_also_across_a_kill(
    db: Path, tmp_path: Path
) -> None:
    port = free_port()
    with (
        Exporter(gpus=4, drop_gpu_after=4) as exporter,
        serving(db, port=port) as (first, wanka),
        prometheus(tmp_path, exporter.target, port) as prom,
    ):
        wait_for(lambda: exporter.scrapes >= 6, 60, "prometheus did not scrape")
        compared = same_as_prometheus(prom, wanka, 1.0)
        assert compared >= 6 * 5 * 3  # scrapes × fields × GPUs at least
        # the vanished GPU's series ended with staleness markers, not NaN values
        [[stale]] = query(
            wanka,
            "SELECT count(*) FROM wanka.stale_markers "
            "WHERE metric LIKE 'DCGM_%' AND labels->>'gpu' = '3'",
        )
        assert stale == 5
        [[nans]] = query(wanka, "SELECT count(*) FROM gpu_metrics WHERE isnan(value)")
        assert nans == 0
        # kill -9 while Prometheus keeps sending; it retries until wanka is back
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        before = exporter.scrapes
        wait_for(lambda: exporter.scrapes >= before + 3, 60, "no scrapes while down")
        with serving(db, port=port) as (_, again):
            wait_for(lambda: exporter.scrapes >= before + 6, 60, "no scrapes after")
            assert same_as_prometheus(prom, again, 1.0) > compared
            [[samples, doubled]] = query(
                again,
                "SELECT count(*), count(*) - count(DISTINCT (series_id, ts)) "
                "FROM wanka.gpu_samples",
            )
            assert samples and doubled == 0
