"""The Grafana dashboards: well-formed provisioning, and every panel's SQL runs on a demo
warehouse after Grafana's macro expansion — directly in DuckDB, and through pgwire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from service.serve.server import Server
from tests.conftest import REPO
from tests.dashboards.grafana_macros import expand
from tests.demo_clusters import FAULTY
from tests.warehouses import Warehouses
from warehouse.security.users import add_user

FOLDER = REPO / "dashboards" / "grafana"
DASHBOARDS = sorted(FOLDER.glob("*.json"))
START = datetime(2026, 10, 30, tzinfo=UTC)  # the demo's jobs and telemetry lie after this
#: Panels that may rightly be empty on a healthy demo.
#: (The simulator keeps every GPU of a job at 1 % or more: no job of the demo has an idle GPU.)
MAY_BE_EMPTY = {
    "Failed refreshes",
    "Pending jobs and GPUs asked for, by partition",
    "Top idle jobs",
}
PASSWORD = "grafana-pw"


def panels() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text())["panels"]:
            out.append((f"{path.stem}: {panel['title']}", panel))
    return out


PANELS = panels()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Server]:
    """The faulty demo: 32 hosts (4 in each cluster, so nccl-tests probes pair them), an hour, a
    fault of each kind; its build refreshed the dynamic tables, so refresh_history has rows."""
    path = warehouses.demo(FAULTY, tmp_path_factory.mktemp("grafana") / "w.duckdb")
    with Server(str(path)) as served:
        cur = served.engine.cursor()
        add_user(cur, "grafana", "reader", PASSWORD)
        cur.close()
        yield served


def _sql(panel: dict[str, Any]) -> str:
    [target] = panel["targets"]
    end = datetime.now(UTC) + timedelta(days=1)  # refresh_history is stamped with the real now
    return expand(target["rawSql"], START, end, interval="5m")


def test_dashboards_are_provisioning_files_for_the_wanka_data_source() -> None:
    assert {p.stem for p in DASHBOARDS} == {
        "cluster_power",
        "job_queue",
        "dynamic_freshness",
        "job_efficiency",
        "cluster_health",
    }
    uids = [json.loads(p.read_text())["uid"] for p in DASHBOARDS]
    assert len(set(uids)) == len(uids)
    for name, panel in PANELS:
        assert panel["datasource"] == {"type": "grafana-postgresql-datasource", "uid": "wanka"}
        [target] = panel["targets"]
        assert target["rawQuery"] and target["format"] in ("time_series", "table"), name
        if target["format"] == "time_series":
            assert '"time"' in expand(target["rawSql"], START, START), name
    source = (FOLDER / "provisioning" / "datasources" / "wanka.yaml").read_text()
    assert "uid: wanka" in source and ":5433" in source


@pytest.mark.parametrize(("name", "panel"), PANELS, ids=[n for n, _ in PANELS])
def test_panel_sql_runs_in_duckdb(server: Server, name: str, panel: dict[str, Any]) -> None:
    rows = server.with_cursor(lambda cur: cur.sql(_sql(panel)).fetchall())
    assert rows or panel["title"] in MAY_BE_EMPTY, name


def _direct(server: Server, panel: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The panel's rows straight from DuckDB, on a cursor of the server's own."""
    return server.with_cursor(lambda cur: cur.sql(_sql(panel)).fetchall())


def test_every_panel_runs_through_pgwire_as_a_reader(server: Server) -> None:
    """What Grafana itself does: the expanded SQL over the PostgreSQL protocol."""
    psycopg = pytest.importorskip("psycopg")
    from service.pgwire import start

    handle = start(server, "127.0.0.1", 0)
    try:
        dsn = (
            f"host=127.0.0.1 port={handle.port} dbname=wanka user=grafana "
            f"password={PASSWORD} sslmode=disable"
        )
        with psycopg.connect(dsn, autocommit=True) as conn:
            for name, panel in PANELS:
                direct = _direct(server, panel)
                got = conn.execute(_sql(panel)).fetchall()
                assert len(got) == len(direct), name
    finally:
        handle.stop()


def test_job_efficiency_panels_agree_with_the_analyses(server: Server) -> None:
    """The dashboard's SQL and the shipped analyses (over the demo's whole time) say the same."""
    from warehouse.analyses import run_analysis_table

    by_title = {
        p["title"]: p for p in json.loads((FOLDER / "job_efficiency.json").read_text())["panels"]
    }

    def both(title: str, analysis: str, params: dict[str, str]) -> tuple[list[Any], list[Any]]:
        return server.with_cursor(
            lambda cur: (
                cur.sql(_sql(by_title[title])).fetchall(),
                run_analysis_table(cur, analysis, params).to_pylist(),
            )
        )

    idle, accounts = both("Idle GPU-hours by account", "gpu_efficiency", {"by": "account"})
    want = {r["name"]: (r["idle_gpu_hours"], r["gpu_hours"]) for r in accounts}
    assert idle and set(want) == {a for a, _, _ in idle}
    for account, idle_h, gpu_h in idle:  # the panel rounds to 0.01, the analysis to 0.001
        assert (idle_h, gpu_h) == pytest.approx(want[account], abs=0.0051), account
    util, partitions = both(
        "Mean GPU utilisation by partition (%)", "gpu_efficiency", {"by": "partition"}
    )
    assert util and dict(util) == {r["name"]: r["util_pct"] for r in partitions}
    energy, jobs = both("Energy per job", "job_energy", {})
    assert energy and [(r[0], r[3], r[5]) for r in energy] == [
        (r["job_id"], r["facility_kwh"], r["carbon_kg"]) for r in jobs[: len(energy)]
    ]
