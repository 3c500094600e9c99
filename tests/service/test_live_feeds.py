"""The live feeds of a real `wanka serve`: file_sd scraping (reread when the file changes, target
health in wanka.scrape_targets and on /metrics) and Slurm polling through a script standing in
for `sacct` that prints real captured output in steps (a failing step retried); and
`wanka scrape --once` for cron."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import invoke_wanka
from tests.exporter import FIELDS, Exporter
from tests.service.serve.test_server_faults import query, serving
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine

pytestmark = pytest.mark.slow
SACCT = Path(__file__).resolve().parents[3] / "shared" / "data" / "slurm" / "sacct-output-v2.txt"
SCONTROL = Path(__file__).resolve().parents[1] / "warehouse" / "fixtures" / "scontrol_show_job.txt"
JOB = "67108865"

STAND_IN = """\
import pathlib, sys
here = pathlib.Path(sys.argv[1])
calls = here / "calls"
step = len(calls.read_text().splitlines()) if calls.exists() else 0
with calls.open("a") as log:
    log.write(" ".join(sys.argv[2:]) + "\\n")
if step == 1:
    sys.exit("sacct: error: Problem talking to the database: Connection refused")
name = "running.txt" if step == 0 else "final.txt"
sys.stdout.write((here / name).read_text())
"""


def stand_in(folder: Path) -> str:
    """A `sacct` that prints the first 40 lines of a real capture with the jobs still RUNNING,
    then fails once, then prints them as they ended."""
    lines = SACCT.read_text().splitlines()[:40]
    running = []
    for line in lines:
        fields = line.split("|")
        fields[0], fields[11] = "RUNNING", "Unknown"  # State, End
        running.append("|".join(fields))
    (folder / "running.txt").write_text("\n".join(running) + "\n")
    (folder / "final.txt").write_text("\n".join(lines) + "\n")
    (folder / "sacct.py").write_text(STAND_IN)
    return f"{sys.executable} {folder / 'sacct.py'} {folder}"


def wait_until(check: object, seconds: float, why: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, why
        time.sleep(0.2)  # polling for the feed, not timing anything


def rows(client: httpx.Client, sql: str) -> list[list[Any]]:
    return query(client, sql)


@pytest.mark.skipif(not SACCT.exists(), reason="needs ../shared/data")
def test_serve_scrapes_rereads_its_targets_and_polls_sacct(
    tmp_path: Path, warehouses: Warehouses
) -> None:
    db = warehouses.empty(tmp_path / "live.duckdb", shipped=True)
    added = invoke_wanka(
        "--db", str(db), "user", "add", "ada", "--role", "admin", "--password-stdin", input="pw"
    )
    assert added.returncode == 0, added.stderr
    sacct = stand_in(tmp_path)
    scontrol = f"{sys.executable} -c \"print(open('{SCONTROL}').read(), end='')\""
    config = tmp_path / "targets.yml"
    with Exporter("node001") as good, Exporter("node002", mode="error") as failing:
        config.write_text(f"- targets: ['{good.target}']\n  labels: {{cluster: c1}}\n")
        extra = [
            "--scrape-config", str(config), "--scrape-interval", "500ms",
            "--sacct-interval", "1s", "--sacct-command", sacct, "--scontrol-command", scontrol,
        ]  # fmt: skip
        with serving(db, extra=extra) as (_, client):
            wait_until(
                lambda: rows(client, "SELECT count(DISTINCT ts) FROM gpu_metrics")[0][0] >= 3,
                60,
                "no scraped samples",
            )
            [[host, cluster]] = rows(
                client, "SELECT DISTINCT host, labels->>'cluster' FROM gpu_metrics"
            )
            assert (host, cluster) == ("node001", "c1")
            # the file changes: the next round scrapes both targets
            config.write_text(
                f"- targets: ['{good.target}', '{failing.target}']\n  labels: {{cluster: c1}}\n"
            )
            wait_until(
                lambda: rows(client, "SELECT count(*) FROM wanka.scrape_targets")[0][0] == 2,
                60,
                "the changed scrape config was not reread",
            )
            health = dict(
                (str(t), (h, e))
                for t, h, e in rows(
                    client, "SELECT target, health, error FROM wanka.scrape_targets"
                )
            )
            assert health[f"http://{good.target}/metrics"] == ("up", None)
            assert health[f"http://{failing.target}/metrics"][0] == "down"
            assert "HTTP 500" in str(health[f"http://{failing.target}/metrics"][1])
            metrics = client.get("/metrics").text
            assert (
                f'wanka_scrape_target_up{{target="http://{failing.target}/metrics"}} 0' in metrics
            )
            assert f'wanka_scrape_target_up{{target="http://{good.target}/metrics"}} 1' in metrics
            # Slurm: RUNNING, then a failed poll, then the jobs as they ended, one row each
            wait_until(
                lambda: (
                    rows(client, f"SELECT state FROM jobs WHERE job_id = '{JOB}'")
                    == [["OUT_OF_MEMORY"]]
                ),
                60,
                "the job's final state never arrived",
            )
            assert rows(client, f"SELECT count(*) FROM jobs WHERE job_id = '{JOB}'") == [[1]]
            metrics = client.get("/metrics").text
            assert 'wanka_sacct_polls_total{outcome="failed"} 1' in metrics
            assert rows(client, "SELECT count(*) FROM jobs WHERE job_id = '4001'") == [[1]]
            [[gpus]] = rows(
                client, "SELECT count(*) FROM gpu_attribution WHERE source = 'scontrol'"
            )
            assert gpus
    calls = (tmp_path / "calls").read_text().splitlines()
    assert all("--parsable2" in c and "--allusers" in c for c in calls)
    starts = [c.split("--starttime=")[1].split()[0] for c in calls]
    assert starts[0] < starts[1]  # the first poll reaches back a day, the next overlaps
    assert starts[2] == starts[1]  # a failed poll leaves the window where it was


def test_scrape_once_stores_one_batch_and_says_which_targets_are_down(tmp_path: Path) -> None:
    db = tmp_path / "cron.duckdb"
    with Exporter("node001") as good, Exporter("node002", mode="error") as failing:
        path = tmp_path / "targets.json"
        path.write_text(json.dumps([{"targets": [good.target, failing.target]}]))
        done = invoke_wanka("--db", str(db), "scrape", "--once", str(path))
        assert done.returncode == 1, done.stderr
        assert "DOWN" in done.stderr and "HTTP 500" in done.stderr
        assert f"{len(FIELDS) * 4} samples to gpu_metrics" in done.stdout
    with Engine(str(db)) as engine:
        got = engine.con.sql(
            "SELECT count(*), count(DISTINCT batch_id) FROM gpu_metrics"
        ).fetchall()
        assert got == [(len(FIELDS) * 4, 1)]
    bad = tmp_path / "bad.yml"
    bad.write_text("- targets: [a:1]\n  labels: {n: [1]}\n")
    refused = invoke_wanka("--db", str(db), "scrape", "--once", str(bad))
    assert refused.returncode == 2 and "bad.yml: entry 1" in refused.stderr
