"""Every shipped analysis: documented, parameters declared exactly, runs, columns as documented."""

from __future__ import annotations

import re

import pytest

from warehouse.analyses import all_analyses, run_analysis_table
from warehouse.kernel.engine import Engine
from warehouse.query import executor as query

NAMES = sorted(all_analyses())
REQUIRED = {
    "interconnect_balance",
    "checkpoint_cost",
    "checkpoint_what_if",
    "queue_wait",
    "gpu_allocation",
    "gpu_utilisation",
    "fragmentation",
    "gpu_hours_by_state",
    "cold_start",
    "power_by_cluster",
    "energy_by_team",
    "perf_per_watt",
    "annual_cost",
    "interruptions",
    "xid_by_model",
    "failure_correlated_jobs",
    "idle_gpu_jobs",
    "gpu_efficiency",
    "job_energy",
    "stragglers",
    "step_time_changes",
    "interruption_causes",
    "health",
}
#: Statements run (and rolled back) before an analysis whose answer on a healthy demo is rightly
#: empty. The demo has no straggler: the first GPU of a 16-GPU job is made 20 % slower.
#: (idle_gpu_jobs needs none: the simulator's jobs leave GPUs idle, simulate/idle.py.)
SLOW_GPU = (
    "UPDATE gpu_metrics SET value = value * 0.8 WHERE metric = 'DCGM_FI_PROF_SM_ACTIVE' "
    "AND (host, gpu) = (SELECT (host, gpu) FROM job_gpus WHERE job_id = (SELECT job_id FROM "
    "job_gpus GROUP BY job_id HAVING count(DISTINCT (host, gpu)) >= 16 ORDER BY job_id LIMIT 1) "
    "ORDER BY host, gpu LIMIT 1)"
)
#: The demo's simulated cluster files no fault tickets: three faults on each of five hosts, a
#: week apart, the last still open.
SOME_FAULTS = (
    "INSERT INTO node_faults (node, start_at, end_at, class, source) "
    "SELECT host, TIMESTAMPTZ '2026-01-01' + to_days(7 * i), "
    "CASE WHEN i < 2 THEN TIMESTAMPTZ '2026-01-01' + to_days(7 * i) + INTERVAL 5 HOUR END, "
    "'GPU', 'csv' FROM (SELECT host FROM nodes ORDER BY host LIMIT 5), range(3) t(i)"
)
DEMO_SETUP = {"stragglers": SLOW_GPU} | {
    name: SOME_FAULTS
    for name in ("fault_rates", "fault_repair_times", "fault_repeat", "fault_weibull")
}


def test_the_operators_questions_are_all_there() -> None:
    assert set(NAMES) >= REQUIRED


@pytest.mark.parametrize("name", NAMES)
def test_header_declares_exactly_the_parameters_the_query_uses(name: str) -> None:
    analysis = all_analyses()[name]
    query = "\n".join(line for line in analysis.sql.splitlines() if not line.startswith("--"))
    used = set(re.findall(r"\$([a-z_][a-z0-9_]*)", query))
    assert used == {p.name for p in analysis.params}, name
    assert analysis.title and analysis.about, name


@pytest.mark.parametrize("name", NAMES)
def test_runs_on_the_demo_with_the_documented_columns(demo_engine: Engine, name: str) -> None:
    cur = demo_engine.cursor()
    setup = DEMO_SETUP.get(name)
    try:
        if setup:
            cur.execute("BEGIN TRANSACTION")  # rolled back: the other tests see the demo as built
            query.execute(cur, setup).read_all()  # gpu_metrics is a view: wanka's DML runs it
        table = run_analysis_table(cur, name)
    finally:
        if setup:
            cur.execute("ROLLBACK")
        cur.close()
    assert table.column_names == [c.name for c in all_analyses()[name].columns]
    assert table.num_rows > 0, name


def test_interconnect_balance_names_the_pcie_slot_behind_a_400g_nic(demo_engine: Engine) -> None:
    """ConnectX-7 (400 Gb/s, 50 GB/s) in a Gen4 x16 slot: the slot's 31.5 GB/s limits."""
    cur = demo_engine.cursor()
    cur.execute("BEGIN TRANSACTION")  # rolled back: the other tests see the demo as built
    try:
        cur.execute(
            "UPDATE nodes SET pcie_gen = 4 WHERE host = "
            "(SELECT min(host) FROM nodes WHERE nic_model = 'ConnectX-7')"
        )
        rows = run_analysis_table(cur, "interconnect_balance").to_pylist()
    finally:
        cur.execute("ROLLBACK")
        cur.close()
    worst = rows[0]
    assert (worst["nic_line_gbs"], worst["pcie_slot_gbs"], worst["bottleneck"]) == (
        50.0,
        31.51,
        "pcie",
    )
    assert worst["lost_pct"] == 37.0
    for row in rows:  # one flat ring over the network is never faster than the hierarchy
        assert row["allreduce_70b_hier_s"] <= row["allreduce_70b_ring_s"]
        assert row["allreduce_7b_hier_s"] < row["allreduce_70b_hier_s"]


def test_checkpoint_cost_async_stall_is_far_below_the_synchronous_write(
    demo_engine: Engine,
) -> None:
    cur = demo_engine.cursor()
    try:
        rows = run_analysis_table(cur, "checkpoint_cost").to_pylist()
    finally:
        cur.close()
    assert rows
    for row in rows:
        assert row["async_stall_s"] < row["sync_stall_s"]
        assert row["lost_async_pct"] <= row["lost_sync_pct"]
        assert row["daly_async_s"] < row["daly_sync_s"]


def test_cold_starts_of_the_alibaba_trace_are_far_from_200_ms(demo_engine: Engine) -> None:
    cur = demo_engine.cursor()
    try:
        [row] = run_analysis_table(cur, "cold_start").to_pylist()
    finally:
        cur.close()
    # The published trace: 7,531 loads, the fastest 1,329 ms, the median 22.7 s.
    assert (row["loads"], row["under_target_pct"]) == (7531, 0.0)
    assert row["p50_ms"] == 22718 and row["p50_over_target"] > 100


def test_checkpoint_what_if_tells_the_70b_story(demo_engine: Engine) -> None:
    """980 GB through one 25 GbE flow (802.3ad keeps a flow on one link): 313.6 s blocked;
    two-stage async on 8 GPUs at 25 GB/s device-to-host: 4.9 s."""
    cur = demo_engine.cursor()
    try:
        rows = run_analysis_table(cur, "checkpoint_what_if").to_pylist()
    finally:
        cur.close()
    slow = [r for r in rows if r["params_b"] == 70 and r["one_flow_gbs"] == 3.125]
    assert slow, rows
    for row in slow:
        assert (row["checkpoint_gb"], row["sync_one_flow_s"], row["async_stall_s"]) == (
            980,
            313.6,
            4.9,
        )
        if row["bond_mode"] == "802.3ad" and row["storage_nic_count"] == 2:
            assert row["sync_all_links_s"] == 156.8  # two flows use both links


def test_scheduling_analyses_cover_the_demo_and_the_real_traces(demo_engine: Engine) -> None:
    """The demo's Slurm jobs, the Philly trace and the Alibaba pod list side by side."""
    cur = demo_engine.cursor()
    try:
        states = run_analysis_table(cur, "gpu_hours_by_state").to_pylist()
        waits = run_analysis_table(cur, "queue_wait").to_pylist()
        held = run_analysis_table(cur, "gpu_allocation", {"bucket": "1 day"}).to_pylist()
    finally:
        cur.close()
    by_cluster: dict[str, set[str]] = {}
    for row in states:
        by_cluster.setdefault(row["cluster"], set()).add(row["state"])
    assert {"COMPLETED", "FAILED", "CANCELLED"} <= by_cluster["demo"]
    assert by_cluster["philly"] == {"UNKNOWN"}  # the AdaptDL copy publishes no states
    assert {"SUCCEEDED", "FAILED", "RUNNING", "PENDING"} <= by_cluster["alibaba-openb"]
    for cluster in ("demo", "philly", "alibaba-openb"):
        shares = [r["gpu_hours_pct"] for r in states if r["cluster"] == cluster]
        assert sum(shares) == pytest.approx(100, abs=0.05), cluster
    assert {r["cluster"] for r in waits} >= {"demo", "alibaba-openb"}
    assert "philly" not in {r["cluster"] for r in waits}  # no start times: no waits invented
    assert {"qos LS", "qos BE"} <= {r["team"] for r in waits if r["cluster"] == "alibaba-openb"}
    assert {r["cluster"] for r in held} >= {"demo", "philly", "alibaba-openb"}


def test_energy_by_team_splits_the_demo_into_measured_and_modelled(demo_engine: Engine) -> None:
    """The demo's telemetry covers its last hour: the jobs running then are measured for that
    hour and modelled for the rest of their run; the others are modelled alone."""
    cur = demo_engine.cursor()
    try:
        rows = run_analysis_table(cur, "energy_by_team").to_pylist()
        [(covered,)] = cur.sql("SELECT count(*) FROM job_gpu_usage").fetchall()
    finally:
        cur.close()
    assert 0 < sum(r["measured_jobs"] for r in rows) <= covered
    for row in rows:
        assert 0 <= row["measured_jobs"] <= row["jobs"]
        assert row["measured_kwh"] + row["modelled_kwh"] == pytest.approx(
            row["facility_kwh"], abs=0.11
        )  # each rounded to 0.1 kWh
    assert sum(r["measured_kwh"] for r in rows) > 0 and sum(r["modelled_kwh"] for r in rows) > 0


def test_stragglers_find_the_slow_gpus_of_jobs_and_nothing_else(demo_engine: Engine) -> None:
    """The demo's injected slow GPU is found, and nothing else; a GPU made 20 % slower too."""
    from tests.demo_clusters import SMALL
    from warehouse.health.evaluate import truth
    from warehouse.simulate import simulate_cluster

    slow = {
        (t["host"], t["gpu"])
        for t in truth(simulate_cluster(SMALL.config))
        if t["kind"] == "slow_gpu"
    }
    cur = demo_engine.cursor()
    try:
        found = run_analysis_table(cur, "stragglers").to_pylist()
        assert {(r["host"], r["gpu"]) for r in found} == slow and slow
        cur.execute("BEGIN TRANSACTION")
        query.execute(cur, SLOW_GPU).read_all()
        more = run_analysis_table(cur, "stragglers").to_pylist()
    finally:
        cur.execute("ROLLBACK")
        cur.close()
    [row] = [r for r in more if (r["host"], r["gpu"]) not in slow]
    assert 15 <= row["slower_pct"] <= 25 and row["z"] < -3.5 and row["job_gpus"] >= 16
