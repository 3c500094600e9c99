"""A real `wanka serve --config` under real signals: SIGHUP and POST /-/reload reread the file
all or nothing, /-/healthy and /-/ready answer as Prometheus's do, SIGTERM and SIGINT stop it
cleanly with exit 0 (a statement in flight finishing within the grace period), and /metrics
passes `promtool check metrics`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO, invoke_wanka
from tests.service.http.test_serve_process import came_up, free_port
from tests.warehouse.remote_write.support import body

pytestmark = pytest.mark.slow
ADMIN, READER = ("ada", "pw-a"), ("ann", "pw-r")


@dataclass
class Serving:
    url: str
    config: Path
    process: subprocess.Popen[str]
    log: Path

    def metric(self, name: str) -> float:
        text = httpx.get(f"{self.url}/metrics", auth=ADMIN, timeout=10).text
        [line] = [x for x in text.splitlines() if x.startswith(name + " ")]
        return float(line.split()[1])

    def events(self) -> list[dict[str, object]]:
        return [json.loads(x) for x in self.log.read_text().splitlines() if x.startswith("{")]

    def wait_for(self, what: str, timeout_s: float = 20) -> dict[str, object]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [e for e in self.events() if what in str(e.get("msg"))]
            if found:
                return found[-1]
            time.sleep(0.1)
        raise AssertionError(f"no log event {what!r} in {self.log.read_text()}")


def _config(http: int, pg: int, grace: str) -> str:
    return (
        f"listen: {{http: '127.0.0.1:{http}', postgres: '127.0.0.1:{pg}'}}\n"
        "scheduler: {refresh_interval: 0s}\n"
        "log: {format: json, level: info}\n"
        f"shutdown: {{grace_period: {grace}}}\n"
    )


def _start(folder: Path, *extra_args: str, users: bool = True, grace: str = "20s") -> Serving:
    db = str(folder / "w.duckdb")
    if users and not (folder / "w.duckdb").exists():
        for (name, password), role in ((ADMIN, "admin"), (READER, "reader")):
            added = invoke_wanka(
                "--db", db, "user", "add", name, "--role", role, "--password-stdin",
                input=f"{password}\n",
            )  # fmt: skip
            assert added.returncode == 0, added.stderr
    http, pg = free_port(), free_port()
    config = folder / "wanka.yml"
    config.write_text(_config(http, pg, grace))
    log = folder / "serve.log"
    command = [sys.executable, "-c", "from service.cli import main; main()", "--db", db]
    command += ["serve", "--config", str(config), *extra_args]
    with log.open("w") as sink:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=dict(os.environ),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    url = f"http://127.0.0.1:{http}"
    if not came_up(process, f"{url}/-/ready"):
        process.kill()
        pytest.fail(f"wanka serve did not come up: {log.read_text()}")
    return Serving(url, config, process, log)


def _stop(serving: Serving, sig: int) -> int:
    serving.process.send_signal(sig)
    try:
        return serving.process.wait(timeout=60)
    finally:
        if serving.process.poll() is None:
            serving.process.kill()


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serving]:
    running = _start(tmp_path_factory.mktemp("lifecycle"))
    yield running
    assert _stop(running, signal.SIGTERM) == 0


def test_healthy_and_ready_need_no_credentials(serving: Serving) -> None:
    assert httpx.get(f"{serving.url}/-/healthy").status_code == 200
    assert httpx.get(f"{serving.url}/-/ready").text == "wanka is Ready.\n"
    assert serving.metric("wanka_config_last_reload_successful") == 1


def test_sighup_rereads_the_file_all_or_nothing(serving: Serving) -> None:
    good = serving.config.read_text()
    before = serving.metric("wanka_config_last_reload_success_timestamp_seconds")
    serving.config.write_text(good + "limits: {query_timeout: 2s}\n")
    serving.process.send_signal(signal.SIGHUP)
    serving.wait_for("configuration reloaded")
    assert serving.metric("wanka_config_last_reload_successful") == 1
    assert serving.metric("wanka_config_last_reload_success_timestamp_seconds") > before
    slow = "SELECT sum(hash(a.range * b.range)) FROM range(400000) a, range(400000) b"
    timed_out = httpx.post(f"{serving.url}/v1/query", json={"sql": slow}, auth=READER, timeout=30)
    assert timed_out.status_code == 408, timed_out.text  # the new limit holds

    serving.config.write_text(good + "limits: {query_timeout: 2s, bogus: 1}\n")
    serving.process.send_signal(signal.SIGHUP)
    refused = serving.wait_for("configuration not reloaded")
    assert "wanka.yml:5: limits.bogus: unknown key" in str(refused["msg"])
    assert refused["level"] == "error"
    assert serving.metric("wanka_config_last_reload_successful") == 0
    still = httpx.post(f"{serving.url}/v1/query", json={"sql": slow}, auth=READER, timeout=30)
    assert still.status_code == 408  # the running configuration kept
    assert serving.process.poll() is None
    serving.config.write_text(good)
    assert httpx.post(f"{serving.url}/-/reload", auth=ADMIN, timeout=30).status_code == 200


def test_post_reload_is_for_admins_and_says_what_needs_a_restart(serving: Serving) -> None:
    assert httpx.post(f"{serving.url}/-/reload", auth=READER, timeout=30).status_code == 403
    assert httpx.post(f"{serving.url}/-/reload", timeout=30).status_code == 401
    good = serving.config.read_text()
    serving.config.write_text(
        good.replace("listen: {http: '127.0.0.1:", "listen: {http: '0.0.0.0:")
    )
    try:
        answer = httpx.post(f"{serving.url}/-/reload", auth=ADMIN, timeout=30)
        assert answer.status_code == 200
        assert answer.json()["needs_restart"] == ["listen.http"]
        serving.config.write_text("log: {level: [\n")
        broken = httpx.post(f"{serving.url}/-/reload", auth=ADMIN, timeout=30)
        assert broken.status_code == 500 and "not valid YAML" in broken.json()["error"]
    finally:
        serving.config.write_text(good)
        httpx.post(f"{serving.url}/-/reload", auth=ADMIN, timeout=30)


def test_metrics_pass_promtool(serving: Serving) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian's prometheus package)")
    text = httpx.get(f"{serving.url}/metrics", auth=ADMIN, timeout=10).text
    assert 'wanka_build_info{duckdb="' in text and "process_start_time_seconds " in text
    checked = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    started = serving.metric("process_start_time_seconds")
    assert time.time() - 600 < started < time.time()


def test_reloads_while_writes_and_refreshes_run_lose_nothing(serving: Serving) -> None:
    """SIGHUPs that restart the scheduler (its interval changes each time) while remote_write
    requests stream in: every sample sent is stored exactly once."""
    good = serving.config.read_text()
    headers = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"}
    base_ms = int(time.time() * 1000) - 3_600_000
    sent, failures = 0, []

    def write() -> None:
        nonlocal sent
        with httpx.Client(auth=ADMIN, timeout=60) as client:
            for k in range(60):
                labels = [("__name__", "DCGM_FI_DEV_POWER_USAGE"), ("Hostname", "reload-host")]
                points = [(base_ms + k * 1000 + i, float(i)) for i in range(50)]
                answer = client.post(
                    f"{serving.url}/api/v1/write",
                    content=body([([*labels, ("gpu", str(g))], points) for g in range(4)]),
                    headers=headers,
                )
                if answer.status_code != 204:
                    failures.append(answer.text)
                sent += 200

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for every in ("1s", "2s", "1s", "3s", "0s"):
            serving.config.write_text(
                good.replace("refresh_interval: 0s", f"refresh_interval: {every}")
            )
            serving.process.send_signal(signal.SIGHUP)
            time.sleep(0.7)
    finally:
        writer.join(timeout=120)
        serving.config.write_text(good)
        httpx.post(f"{serving.url}/-/reload", auth=ADMIN, timeout=30)
    assert not failures and sent == 60 * 200
    counted = (
        "SELECT count(*), count(DISTINCT (gpu, ts)) FROM gpu_metrics WHERE host = 'reload-host'"
    )
    answer = httpx.post(f"{serving.url}/v1/query", json={"sql": counted}, auth=ADMIN, timeout=60)
    stored = answer.json()["rows"]
    assert stored == [[sent, sent]]
    assert serving.metric("wanka_config_last_reload_successful") == 1


def test_metrics_say_the_feed_lag_and_the_freshness_targets(serving: Serving) -> None:
    now_ms = int(time.time() * 1000)
    sent = body([([("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("Hostname", "n1"), ("gpu", "0")],
                  [(now_ms - 3000, 40.0)])])  # fmt: skip
    headers = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"}
    stored = httpx.post(
        f"{serving.url}/api/v1/write", content=sent, headers=headers, auth=ADMIN, timeout=30
    )
    assert stored.status_code == 204, stored.text
    assert 3.0 <= serving.metric("wanka_remote_write_lag_seconds") < 60
    text = httpx.get(f"{serving.url}/metrics", auth=ADMIN, timeout=10).text
    targets = [x for x in text.splitlines() if x.startswith("wanka_dynamic_table_freshness")]
    assert targets and all(float(x.split()[1]) > 0 for x in targets)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_lets_the_statement_in_flight_finish_and_exits_0(
    tmp_path: Path, sig: int
) -> None:
    serving = _start(tmp_path)
    answers: list[httpx.Response] = []
    # a few seconds (DuckDB's progress bar is off in a session, so nothing is printed)
    slow = (
        "SELECT count(*) AS n FROM range(20000) a, range(20000) b "
        "WHERE hash(a.range * b.range) % 7 = 0"
    )
    query = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{serving.url}/v1/query", json={"sql": slow}, auth=READER, timeout=60)
        )
    )
    query.start()
    time.sleep(1.0)
    assert _stop(serving, sig) == 0
    query.join(timeout=60)
    [answer] = answers
    assert answer.status_code == 200 and answer.json()["rows"][0][0] > 50_000_000
    stopping = serving.wait_for("stopping")
    assert signal.Signals(sig).name in str(stopping["msg"])
    assert not any(e["level"] == "error" for e in serving.events())


def test_a_statement_past_the_grace_period_is_cancelled_and_the_stop_still_exits_0(
    tmp_path: Path,
) -> None:
    serving = _start(tmp_path, grace="1s")
    answers: list[httpx.Response | Exception] = []
    endless = "SELECT sum(hash(a.range * b.range)) FROM range(400000) a, range(400000) b"

    def ask() -> None:
        try:
            answers.append(
                httpx.post(
                    f"{serving.url}/v1/query", json={"sql": endless}, auth=READER, timeout=60
                )
            )
        except httpx.HTTPError as error:
            answers.append(error)

    query = threading.Thread(target=ask)
    query.start()
    time.sleep(1.0)
    began = time.monotonic()
    assert _stop(serving, signal.SIGTERM) == 0
    assert time.monotonic() - began < 20
    query.join(timeout=30)
    [answer] = answers
    assert not isinstance(answer, httpx.Response) or answer.status_code >= 400


def test_sighup_without_a_file_is_not_fatal(tmp_path: Path) -> None:
    db = str(tmp_path / "w.duckdb")
    http = free_port()
    command = [sys.executable, "-c", "from service.cli import main; main()", "--db", db]
    command += ["serve", "--http-port", str(http), "--pg-port", "0", "--log-format", "json"]
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    url = f"http://127.0.0.1:{http}"
    try:
        assert came_up(process, f"{url}/-/ready")
        process.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert httpx.get(f"{url}/-/healthy", timeout=5).status_code == 200
        assert httpx.post(f"{url}/-/reload", timeout=5).status_code == 400
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        output = process.stdout.read() if process.stdout else ""
        assert "started without --config" in output
    finally:
        if process.poll() is None:
            process.kill()
