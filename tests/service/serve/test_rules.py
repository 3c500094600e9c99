"""`wanka serve` evaluates rule files and tells a real Alertmanager (0.25), as Prometheus does:
`POST /api/v2/alerts` with external labels, `startsAt` the firing time, `endsAt` four minutes
on while firing and the resolution once resolved, `generatorURL`; every Alertmanager gets them,
one that cannot be reached is counted under Prometheus's metric names and blocks nothing; a
template that fails still sends the alert; the rules' state answers /api/v1/rules and
/api/v1/alerts."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from service.serve.server import Server
from service.serve.settings import RuleSettings, ServeSettings
from tests.service.serve.alertmanager import alertmanager, needs_alertmanager, wait_for
from tests.warehouses import Warehouses
from warehouse.notifier.payload import rfc3339
from warehouse.rules.manager import load_groups
from warehouse.rules.store import Store, labels_of
from warehouse.security.users import User

# one Alertmanager and one served warehouse for the module: its tests on one xdist worker
pytestmark = [needs_alertmanager, pytest.mark.xdist_group("rules-alertmanager")]

RULES = """\
groups:
  - name: gpu
    interval: 15s
    rules:
      - record: gpu:temp:max
        expr: max by (Hostname) (gpu_temp_celsius)
      - alert: GpuHot
        expr: gpu:temp:max > 90
        labels: {severity: page}
        annotations:
          summary: '{{ $labels.Hostname }} is at {{ $value }} C'
          broken: '{{ humanize "hot" }}'
"""


@pytest.fixture(scope="module")
def am(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with alertmanager(tmp_path_factory.mktemp("am")) as url:
        yield url


@pytest.fixture(scope="module")
def rules_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rules")


@pytest.fixture(scope="module")
def server(rules_folder: Path, warehouses: Warehouses, am: str) -> Iterator[Server]:
    """One server for the module (its tests run in order: the reload last)."""
    tmp_path = rules_folder
    (tmp_path / "gpu.rules.yml").write_text(RULES)
    files = (str(tmp_path / "gpu.rules.yml"),)
    rules = RuleSettings(
        files=files, groups=tuple(load_groups(files)), query_offset_s=0.0,
        alertmanagers=(am, "http://127.0.0.1:1"), alertmanager_timeout_s=2.0,
        external_url="http://wanka.example:8080",
    )  # fmt: skip
    path = warehouses.empty(tmp_path / "w.duckdb")
    with Server(str(path)) as served:
        served.start(
            ServeSettings(
                str(path),
                refresh_interval_s=None,
                external_labels=(("cluster", "a"),),
                rules=rules,
            )
        )
        served.rules.stop_loop()  # the test evaluates at the times it chooses
        yield served


def temps(server: Server, at_ms: int, **by_host: float) -> None:
    cur = server.engine.cursor()
    Store(cur).write(
        (labels_of({"__name__": "gpu_temp_celsius", "Hostname": h, "gpu": "0"}), at_ms, v)
        for h, v in by_host.items()
    )
    cur.close()


ALERTS = '{{"Hostname":"n1","alertname":"GpuHot","alertstate":"{state}","severity":"page"}} {at}'


def stored(server: Server, metric: str) -> list[str]:
    cur = server.engine.cursor()
    rows = cur.execute(
        "SELECT labels || ' ' || epoch_ms(ts)::VARCHAR FROM prom_samples WHERE metric = ?",
        [metric],
    ).fetchall()
    cur.close()
    return [r[0] for r in rows]


def evaluate(server: Server, at_ms: int) -> None:
    cur = server.engine.cursor()
    assert server.rules.evaluate_due(cur, at_ms) == 1
    cur.close()


def test_a_firing_alert_reaches_alertmanager_with_prometheus_fields(
    server: Server, am: str
) -> None:
    # a minute back, so that the resolution below is in the past for Alertmanager too
    now = int(time.time() * 1000) // 15_000 * 15_000 - 60_000
    temps(server, now - 5_000, n1=95.0, n2=60.0)
    evaluate(server, now)
    [alert] = wait_for(am, lambda found: any(a["labels"].get("Hostname") == "n1" for a in found))
    assert alert["labels"] == {
        "alertname": "GpuHot", "Hostname": "n1", "cluster": "a", "severity": "page",
    }  # fmt: skip
    assert alert["annotations"]["summary"] == "n1 is at 95 C"
    assert alert["annotations"]["broken"].startswith("<error expanding template: ")
    assert "error calling humanize" in alert["annotations"]["broken"]
    assert alert["startsAt"] == rfc3339(now)
    assert alert["endsAt"] == rfc3339(now + 4 * 60_000)  # four resend delays: 4 min
    assert alert["generatorURL"].startswith("http://wanka.example:8080/graph?g0.expr=")
    # the unreachable Alertmanager was tried, counted, and held nothing up
    text = server.metrics.render(server.gauges())
    assert 'prometheus_notifications_errors_total{alertmanager="http://127.0.0.1:1"}' in text
    assert "prometheus_notifications_queue_capacity 10000" in text
    # the recording rule's series is stored: PromQL and SQL read it
    cur = server.engine.cursor()
    [(value,)] = cur.execute(
        "SELECT value FROM prom_samples WHERE metric = 'gpu:temp:max' "
        'AND labels = \'{"Hostname":"n1"}\''
    ).fetchall()
    assert value == 95.0
    cur.close()
    # ALERTS is written from the evaluation after the first (as Prometheus: once the `for`
    # state is restored)
    temps(server, now + 10_000, n1=96.0)
    evaluate(server, now + 15_000)
    assert ALERTS.format(state="firing", at=now + 15_000) in stored(server, "ALERTS")
    assert ALERTS.format(state="", at=now + 15_000).replace(',"alertstate":""', "") in (
        stored(server, "ALERTS_FOR_STATE")
    )
    # resolved: sent at once with endsAt = the resolution, and Alertmanager lets it go
    temps(server, now + 25_000, n1=70.0)
    evaluate(server, now + 30_000)
    wait_for(am, lambda found: not any(a["labels"].get("Hostname") == "n1" for a in found))
    [group] = server.rules.snapshot[0]["groups"]
    assert [r["health"] for r in group["rules"]] == ["ok", "ok"]
    assert group["rules"][1]["state"] == "inactive"


def test_the_api_answers_as_prometheus(server: Server) -> None:
    from service.http import create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette's note about httpx vs httpx2
        from fastapi.testclient import TestClient
    from warehouse.security.users import add_user

    cur = server.engine.cursor()
    add_user(cur, "ann", "reader", "pw-123456")
    cur.close()
    now = int(time.time() * 1000) // 15_000 * 15_000
    temps(server, now - 1_000, n3=99.5)
    evaluate(server, now)
    with TestClient(create_app(server)) as client:
        rules = client.get("/api/v1/rules", auth=("ann", "pw-123456")).json()
        alerts = client.get("/api/v1/alerts", auth=("ann", "pw-123456")).json()
        only = client.get("/api/v1/rules?type=record", auth=("ann", "pw-123456")).json()
    assert rules["status"] == "success"
    [group] = rules["data"]["groups"]
    assert (group["name"], group["interval"], group["limit"]) == ("gpu", 15, 0)
    recording, alerting = group["rules"]
    assert recording["type"] == "recording" and recording["health"] == "ok"
    assert alerting["type"] == "alerting" and alerting["state"] == "firing"
    assert alerting["duration"] == 0 and alerting["labels"] == {"severity": "page"}
    [alert] = alerting["alerts"]
    assert alert["value"] == "9.95e+01" and alert["state"] == "firing"
    assert alerts["data"]["alerts"] == [alert]
    assert [r["type"] for r in only["data"]["groups"][0]["rules"]] == ["recording"]
    # the same in SQL, for a reader
    session = server.session(User("ann", "reader"), fmt="json")
    with session.turn():
        rules_rows = (
            session.run("SELECT name, type, health, state FROM wanka.rules ORDER BY position")
            .reader.read_all()
            .to_pylist()
        )
        alert_rows = (
            session.run(
                "SELECT alertname, state, value, labels FROM wanka.alerts WHERE state = 'firing'"
            )
            .reader.read_all()
            .to_pylist()
        )
    session.close()
    assert [tuple(r.values()) for r in rules_rows] == [
        ("gpu:temp:max", "recording", "ok", None), ("GpuHot", "alerting", "ok", "firing"),
    ]  # fmt: skip
    [row] = alert_rows
    assert (row["alertname"], row["state"], row["value"]) == ("GpuHot", "firing", 99.5)
    assert json.loads(row["labels"])["Hostname"] == "n3"


def test_a_reload_with_a_changed_group_keeps_nothing_stale(
    server: Server, rules_folder: Path
) -> None:
    (rules_folder / "gpu.rules.yml").write_text(RULES.replace("> 90", "> 80"))
    settings = server.settings
    groups = tuple(load_groups(settings.rules.files))
    server.apply(replace(settings, rules=replace(settings.rules, groups=groups)))
    [group] = server.rules.snapshot[0]["groups"]
    assert group["rules"][1]["query"] == "gpu:temp:max > 80"
