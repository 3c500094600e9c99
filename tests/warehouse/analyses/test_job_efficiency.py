"""idle_gpu_jobs, gpu_efficiency, job_energy and energy_by_team on a warehouse small enough to
work out by hand: five jobs (one a Kubernetes pod), five GPUs on two hosts at two sites, one
hour of telemetry at one sample a minute carrying dcgm-exporter's job labels.

Per GPU (n samples a minute apart cover n minutes; energy = power × time, or the counter):

    job    GPU    samples  utilisation          power         GPU time  energy
    j1     n1/0   60       50 %                 300 W         1 h       0.3 kWh
    j1     n1/1   60       0 % ×40, 50 % ×20    100 W         1 h       0.1 kWh  (40 min idle)
    j2     n2/0   60       0 % ×50, 3 % ×10     60 W          1 h       0.06 kWh (mean 0.5 %)
    ml/pod n2/1   30       80 %                 counter       0.5 h     0.2 kWh
    j3     n1/2   20       0 %                  80 W          1/3 h     0.02667 kWh
    j4     -      -        (no telemetry: 4 GPUs × 2 h, modelled)

Sites: n1 at s1 (PUE 1.5, 0.2 per kWh, 400 g/kWh), n2 at s2 (PUE 1.2, 0.1 per kWh, 100 g/kWh).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.warehouse.samples import insert_samples, minute
from tests.warehouses import Warehouses
from warehouse.analyses import run_analysis_table
from warehouse.dynamic.shipped import install_shipped
from warehouse.kernel.engine import Engine

HPC = '{"hpc_job":"%s"}'
POD = '{"namespace":"ml","pod":"pod-x"}'

#: (labels, host, gpu, metric, one value per minute from 00:00)
SERIES: list[tuple[str, str, int, str, list[float]]] = [
    (HPC % "j1", "n1", 0, "DCGM_FI_DEV_GPU_UTIL", [50.0] * 60),
    (HPC % "j1", "n1", 0, "DCGM_FI_DEV_POWER_USAGE", [300.0] * 60),
    (HPC % "j1", "n1", 1, "DCGM_FI_DEV_GPU_UTIL", [0.0] * 40 + [50.0] * 20),
    (HPC % "j1", "n1", 1, "DCGM_FI_DEV_POWER_USAGE", [100.0] * 60),
    (HPC % "j2", "n2", 0, "DCGM_FI_DEV_GPU_UTIL", [0.0] * 50 + [3.0] * 10),
    (HPC % "j2", "n2", 0, "DCGM_FI_DEV_POWER_USAGE", [60.0] * 60),
    (POD, "n2", 1, "DCGM_FI_DEV_GPU_UTIL", [80.0] * 30),
    # mJ: 400 W for a minute is 24 MJ; 29 steps × 30/29 scrapes' worth = 0.2 kWh
    (POD, "n2", 1, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", [i * 24e6 for i in range(30)]),
    (HPC % "j3", "n1", 2, "DCGM_FI_DEV_GPU_UTIL", [0.0] * 20),
    (HPC % "j3", "n1", 2, "DCGM_FI_DEV_POWER_USAGE", [80.0] * 20),
]

#: job_id, user, account, partition, state, gpus, node, elapsed_s
JOBS = [
    ("j1", "alice", "team-a", "p1", "COMPLETED", 2, "n1", 3600),
    ("j2", "bob", "team-b", "p2", "RUNNING", 1, "n2", 5400),  # telemetry saw 1 h of its 1.5
    ("pod-x", "carol", "ml", "inference", "RUNNING", 1, "n2", 1800),
    ("j3", "alice", "team-a", "p1", "COMPLETED", 1, "n1", 1200),
    ("j4", "dave", "team-a", "p1", "COMPLETED", 4, "n1", 7200),
]


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        con = engine.con
        con.execute(
            "INSERT INTO sites (site, pue, price_per_kwh, grid_g_per_kwh) VALUES "
            "('s1', 1.5, 0.2, 400), ('s2', 1.2, 0.1, 100)"
        )
        con.execute(
            "INSERT INTO nodes (host, cluster, site, gpu_model, gpus) VALUES "
            "('n1', 'c1', 's1', 'H100', 8), ('n2', 'c2', 's2', 'H100', 8)"
        )
        for job_id, user, account, partition, state, gpus, node, elapsed in JOBS:
            con.execute(
                "INSERT INTO jobs (job_id, user, account, partition, state, gpus, node_list, "
                "start_at, end_at, elapsed_s) VALUES (?, ?, ?, ?, ?, ?, [?], "
                "TIMESTAMPTZ '2026-11-01', CASE WHEN ? = 'COMPLETED' THEN TIMESTAMPTZ "
                "'2026-11-01' + to_seconds(CAST(? AS BIGINT)) END, ?)",
                [job_id, user, account, partition, state, gpus, node, state, elapsed, elapsed],
            )
        rows = [
            (minute, host, gpu, metric, value, labels)
            for labels, host, gpu, metric, values in SERIES
            for minute, value in enumerate(values)
        ]
        insert_samples(
            con,
            [
                {"ts": minute(m), "host": h, "gpu": g, "uuid": f"GPU-{h}-{g}", "model": "H100"}
                | {"metric": metric, "value": v, "labels": lab}
                for m, h, g, metric, v, lab in rows
            ],
        )
        install_shipped(engine)  # creates the dynamic tables, each refreshed once
        yield engine


def run(eng: Engine, name: str, setup: str = "", **params: str) -> list[dict[str, Any]]:
    """The analysis's rows; `setup` runs first in a transaction rolled back afterwards."""
    cur = eng.cursor()
    cur.execute("BEGIN TRANSACTION")
    try:
        if setup:
            cur.execute(setup)
        rows: list[dict[str, Any]] = run_analysis_table(cur, name, params).to_pylist()
        return rows
    finally:
        cur.execute("ROLLBACK")
        cur.close()


def test_the_dynamic_tables_see_what_the_table_of_the_docstring_says(eng: Engine) -> None:
    got = eng.con.sql(
        "SELECT job_id, host, gpu, samples, gpu_seconds, round(util_pct, 3), idle_gpu_seconds, "
        "round(energy_kwh, 5) FROM job_gpu_usage_by_gpu ORDER BY job_id, gpu"
    ).fetchall()
    assert got == [
        ("j1", "n1", 0, 60, 3600.0, 50.0, 0.0, 0.3),
        ("j1", "n1", 1, 60, 3600.0, 16.667, 2400.0, 0.1),
        ("j2", "n2", 0, 60, 3600.0, 0.5, 3000.0, 0.06),
        ("j3", "n1", 2, 20, 1200.0, 0.0, 1200.0, 0.02667),
        ("ml/pod-x", "n2", 1, 30, 1800.0, 80.0, 0.0, 0.2),
    ]


# -- idle_gpu_jobs ---------------------------------------------------------------------------

IDLE_J2 = {
    # n2/0's mean (0.5 %) is below the idle_gpu rule's 1 %: all its hour counts, not the 50 min
    # its samples read 0 %; 0.06 kWh × 1.2 PUE at 0.1 per kWh
    "job_id": "j2",
    "user": "bob",
    "account": "team-b",
    "partition": "p2",
    "state": "RUNNING",
    "gpus_seen": 1,
    "idle_gpus": 1,
    "idle_gpu_hours": 1.0,
    "gpu_hours": 1.0,
    "idle_pct": 100.0,
    "wasted_kwh": 0.072,
    "wasted_cost": 0.0072,
}
IDLE_J1 = {
    # n1/1 read 0 % for 40 of its 60 minutes (mean 16.7 %); 2/3 of 0.1 kWh × 1.5 at 0.2 per kWh
    "job_id": "j1",
    "user": "alice",
    "account": "team-a",
    "partition": "p1",
    "state": "COMPLETED",
    "gpus_seen": 2,
    "idle_gpus": 1,
    "idle_gpu_hours": 0.667,
    "gpu_hours": 2.0,
    "idle_pct": 33.3,
    "wasted_kwh": 0.1,
    "wasted_cost": 0.02,
}


def test_idle_jobs_by_default_are_those_with_a_gpu_idle_30_minutes(eng: Engine) -> None:
    """j3's GPU was idle 20 minutes only; the pod's GPU worked throughout."""
    assert run(eng, "idle_gpu_jobs") == [IDLE_J2, IDLE_J1]


def test_a_gpu_hour_price_adds_to_the_electricity(eng: Engine) -> None:
    rows = run(eng, "idle_gpu_jobs", price_per_gpu_hour="2")
    assert [(r["job_id"], r["wasted_cost"]) for r in rows] == [
        ("j2", 0.0072 + 1.0 * 2),
        ("j1", round(0.02 + 2400 / 3600 * 2, 4)),
    ]


def test_idle_minutes_lowers_the_bar(eng: Engine) -> None:
    rows = run(eng, "idle_gpu_jobs", idle_minutes="10")
    assert [r["job_id"] for r in rows] == ["j2", "j1", "j3"]
    j3 = rows[2]
    assert (j3["idle_gpus"], j3["idle_gpu_hours"], j3["idle_pct"]) == (1, 0.333, 100.0)
    assert (j3["wasted_kwh"], j3["wasted_cost"]) == (0.04, 0.008)  # 80 W × 20 min × 1.5


def test_the_defaults_follow_the_efficiency_rules(eng: Engine) -> None:
    """An admin's thresholds in wanka.efficiency_rules are what the analysis applies."""
    shorter = "UPDATE wanka.efficiency_rules SET threshold = 15 WHERE rule = 'idle_minutes'"
    assert [r["job_id"] for r in run(eng, "idle_gpu_jobs", shorter)] == ["j2", "j1", "j3"]
    # n1/1's mean 16.7 % is now below the idle_gpu threshold: its whole hour counts
    higher = "UPDATE wanka.efficiency_rules SET threshold = 20 WHERE rule = 'idle_gpu'"
    rows = run(eng, "idle_gpu_jobs", higher)
    assert [(r["job_id"], r["idle_gpu_hours"], r["wasted_kwh"]) for r in rows] == [
        ("j1", 1.0, 0.15),  # ties on idle GPU-hours go by job id
        ("j2", 1.0, 0.072),
    ]


# -- gpu_efficiency --------------------------------------------------------------------------

TEAM_A = {
    # j1 and j3: 2 h + 1/3 h; utilisation (50 × 1 h + 16.67 × 1 h + 0 × 1/3 h) / (7/3 h);
    # idle: n1/1's 40 min and n1/2's 20 min (its mean, 0 %, is below 1 %)
    "grouped_by": "account",
    "name": "team-a",
    "jobs": 2,
    "gpu_hours": 2.333,
    "util_pct": 28.6,
    "idle_gpu_hours": 1.0,
    "idle_pct": 42.9,
    "energy_kwh": 0.427,
    "facility_kwh": 0.64,
    "cost": 0.128,
    "rank": 2,
}
TEAM_B = {
    "grouped_by": "account",
    "name": "team-b",
    "jobs": 1,
    "gpu_hours": 1.0,
    "util_pct": 0.5,
    "idle_gpu_hours": 1.0,
    "idle_pct": 100.0,
    "energy_kwh": 0.06,
    "facility_kwh": 0.072,
    "cost": 0.0072,
    "rank": 1,  # as idle as team-a, and the lower utilisation
}
ML = {
    # the pod's telemetry names it ml/pod-x: its job log row is pod-x under account ml
    "grouped_by": "account",
    "name": "ml",
    "jobs": 1,
    "gpu_hours": 0.5,
    "util_pct": 80.0,
    "idle_gpu_hours": 0.0,
    "idle_pct": 0.0,
    "energy_kwh": 0.2,
    "facility_kwh": 0.24,
    "cost": 0.024,
    "rank": 3,
}


def test_efficiency_by_account(eng: Engine) -> None:
    assert run(eng, "gpu_efficiency") == [TEAM_B, TEAM_A, ML]


def test_efficiency_by_user_and_partition_and_all_three(eng: Engine) -> None:
    users = run(eng, "gpu_efficiency", by="user")
    assert [(r["name"], r["jobs"], r["gpu_hours"], r["rank"]) for r in users] == [
        ("bob", 1, 1.0, 1),
        ("alice", 2, 2.333, 2),
        ("carol", 1, 0.5, 3),
    ]
    partitions = run(eng, "gpu_efficiency", by="partition")
    assert [(r["name"], r["util_pct"], r["idle_gpu_hours"]) for r in partitions] == [
        ("p2", 0.5, 1.0),
        ("p1", 28.6, 1.0),
        ("inference", 80.0, 0.0),
    ]
    every = run(eng, "gpu_efficiency", by="")
    assert [r["grouped_by"] for r in every] == ["account"] * 3 + ["partition"] * 3 + ["user"] * 3
    assert sum(r["gpu_hours"] for r in every) == pytest.approx(3 * (2.333 + 1.0 + 0.5))


def test_efficiency_cost_adds_the_gpu_hour_price(eng: Engine) -> None:
    rows = {r["name"]: r["cost"] for r in run(eng, "gpu_efficiency", price_per_gpu_hour="2")}
    assert rows == {
        "team-a": round(0.128 + 8400 / 3600 * 2, 4),
        "team-b": 0.0072 + 2.0,
        "ml": 0.024 + 1.0,
    }


def test_efficiency_by_an_unknown_grouping_is_no_rows(eng: Engine) -> None:
    """Like an unknown $cluster elsewhere: $by picks the rows, and none is grouped by team."""
    assert run(eng, "gpu_efficiency", by="team") == []


# -- job_energy ------------------------------------------------------------------------------


def test_job_energy_takes_each_jobs_measured_energy_to_its_site(eng: Engine) -> None:
    rows = run(eng, "job_energy")
    shown = ("job_id", "account", "site", "gpus_seen", "gpu_hours", "gpu_kwh", "pue")
    got = [tuple(r[c] for c in (*shown, "facility_kwh", "cost", "carbon_kg")) for r in rows]
    assert got == [
        ("j1", "team-a", "s1", 2, 2.0, 0.4, 1.5, 0.6, 0.12, 0.24),  # 0.6 kWh × 400 g
        ("ml/pod-x", "ml", "s2", 1, 0.5, 0.2, 1.2, 0.24, 0.024, 0.024),
        ("j2", "team-b", "s2", 1, 1.0, 0.06, 1.2, 0.072, 0.0072, 0.007),
        ("j3", "team-a", "s1", 1, 0.333, 0.027, 1.5, 0.04, 0.008, 0.016),
    ]
    pod = rows[1]
    assert (pod["user"], pod["partition"], pod["state"]) == ("carol", "inference", "RUNNING")


def test_job_energy_is_job_gpu_usage_energy(eng: Engine) -> None:
    usage = dict(eng.con.sql("SELECT job_id, round(energy_kwh, 3) FROM job_gpu_usage").fetchall())
    assert {r["job_id"]: r["gpu_kwh"] for r in run(eng, "job_energy")} == usage


def test_job_energy_for_one_account(eng: Engine) -> None:
    assert [r["job_id"] for r in run(eng, "job_energy", account="team-a")] == ["j1", "j3"]


def test_job_energy_leaves_facility_figures_unknown_off_the_inventory(eng: Engine) -> None:
    rows = run(eng, "job_energy", "DELETE FROM nodes WHERE host = 'n2'")
    j2 = next(r for r in rows if r["job_id"] == "j2")
    assert j2["gpu_kwh"] == 0.06
    assert (j2["site"], j2["pue"], j2["facility_kwh"], j2["cost"], j2["carbon_kg"]) == (None,) * 5


# -- energy_by_team --------------------------------------------------------------------------


def _model_kwh(eng: Engine, util: float, gpu_seconds: float, pue: float) -> float:
    """gpu_power_w at the cluster's measured utilisation over the GPU time, × PUE."""
    [(tdp, idle)] = eng.con.sql(
        "SELECT tdp_w, idle_w FROM gpu_models WHERE model = 'H100'"
    ).fetchall()
    watts = float(idle) + (0.9 * float(tdp) - float(idle)) * util
    return watts * gpu_seconds / 3.6e6 * pue


def test_energy_by_team_measures_what_telemetry_covers_and_models_the_rest(eng: Engine) -> None:
    # The clusters' mean utilisation (gpu_hourly_host, one hour): c1 = n1's 140 samples,
    # (60 × 50 + 20 × 50) / 140; c2 = n2's 90, (10 × 3 + 30 × 80) / 90 = 27 %.
    c1, c2 = 4000 / 140 / 100, 0.27
    j4 = _model_kwh(eng, c1, 4 * 7200, 1.5)  # no telemetry: all of it modelled
    j2_rest = _model_kwh(eng, c2, 5400 - 3600, 1.2)  # telemetry saw 1 h of its 1.5 h
    team_a = {"measured": 0.6 + 0.04, "modelled": j4, "cost": (0.6 + 0.04 + j4) * 0.2}
    team_b = {"measured": 0.072, "modelled": j2_rest, "cost": (0.072 + j2_rest) * 0.1}
    rows = {r["team"]: r for r in run(eng, "energy_by_team")}
    assert list(rows) == ["team-a", "ml", "team-b"]  # by cost
    for team, want, gpu_h, jobs, measured_jobs, costliest, kg in (
        ("team-a", team_a, 37200 / 3600, 3, 2, "j4", (0.64 + j4) * 0.4),
        ("team-b", team_b, 1.5, 1, 1, "j2", (0.072 + j2_rest) * 0.1),
    ):
        row = rows[team]
        assert (row["jobs"], row["measured_jobs"], row["costliest_job"]) == (
            jobs,
            measured_jobs,
            costliest,
        )
        assert row["gpu_hours"] == round(gpu_h, 1)
        assert row["measured_kwh"] == round(want["measured"], 1)
        assert row["modelled_kwh"] == round(want["modelled"], 1)
        assert row["facility_kwh"] == round(want["measured"] + want["modelled"], 1)
        assert row["cost"] == round(want["cost"], 2)
        assert row["cost_per_gpu_hour"] == round(want["cost"] / gpu_h, 4)
        assert row["carbon_t"] == round(kg / 1e3, 3)
    pod = rows["ml"]  # pod-x: its telemetry (ml/pod-x) covers all its 30 minutes
    assert (pod["measured_jobs"], pod["measured_kwh"], pod["modelled_kwh"]) == (1, 0.2, 0.0)
    assert (pod["facility_kwh"], pod["cost"], pod["costliest_job"]) == (0.2, 0.02, "pod-x")


def test_energy_by_team_without_telemetry_is_the_model_alone(eng: Engine) -> None:
    rows = run(eng, "energy_by_team", "DELETE FROM job_gpu_usage_by_gpu")
    for row in rows:
        assert (row["measured_jobs"], row["measured_kwh"]) == (0, 0.0)
        assert row["modelled_kwh"] == row["facility_kwh"]
