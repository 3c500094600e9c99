"""interruption_causes reproduces Llama 3's Table 5 from the events an operator's warehouse holds.

Dubey et al., "The Llama 3 Herd of Models" (2024), section 3.3.4, Table 5: 419 unexpected
interruptions in a 54-day snapshot of pre-training on 16,384 H100. The 419 are fed as a real
operator's data would hold them: the GPU faults telemetry names (Faulty GPU, HBM3, SRAM, GSP) as
gpu_events XIDs on random GPUs, a third of them also in the job log as xid_failure; the rest as
job_events 'interruption' rows whose detail is the cause triage wrote. Around them, records that
must not count: XIDs that stop nothing, XIDs the job went on after, the gauge still showing an
XID the job log had, a second XID of the same fault, a triage row and an xid_failure of one stop.

Table 5 prints 30.1 % for Faulty GPU's 148 interruptions, but 148 / 419 is 35.3 %; its other
shares are count / 419. The analysis computes shares from the counts, so this row differs from
the printed one, and the printed shares sum to 94.9 %, not 100. The paper's "GPU issues are
58.7 %" is the sum of the printed GPU shares; from the counts they are 64.0 %.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.warehouses import Warehouses
from udfs.reliability import gpu_mtbf_h
from warehouse.analyses import run_analysis_table
from warehouse.kernel.engine import Engine

#: Table 5 as published: cause (its Component column), component (its Category), count, printed %.
TABLE_5 = [
    ("Faulty GPU", "GPU", 148, 30.1),
    ("GPU HBM3 Memory", "GPU", 72, 17.2),
    ("Software Bug", "Dependency", 54, 12.9),
    ("Network Switch/Cable", "Network", 35, 8.4),
    ("Host Maintenance", "Unplanned Maintenance", 32, 7.6),
    ("GPU SRAM Memory", "GPU", 19, 4.5),
    ("GPU System Processor", "GPU", 17, 4.1),
    ("NIC", "Host", 7, 1.7),
    ("NCCL Watchdog Timeouts", "Unknown", 7, 1.7),
    ("Silent Data Corruption", "GPU", 6, 1.4),
    ("GPU Thermal Interface + Sensor", "GPU", 6, 1.4),
    ("SSD", "Host", 3, 0.7),
    ("Power Supply", "Host", 3, 0.7),
    ("Server Chassis", "Host", 2, 0.5),
    ("IO Expansion Board", "Host", 2, 0.5),
    ("Dependency", "Dependency", 2, 0.5),
    ("CPU", "Host", 2, 0.5),
    ("System Memory", "Host", 2, 0.5),
]
TOTAL, DAYS, GPUS, PER_HOST = 419, 54, 16_384, 8
START = datetime(2024, 3, 1, tzinfo=UTC)
END = START + timedelta(days=DAYS)
JOB = "llama3-405b"
HOSTS = [f"gt{n:04d}" for n in range(GPUS // PER_HOST)]
#: The XIDs telemetry shows for the GPU faults it can name; each stops what runs on the GPU.
XIDS = {
    "Faulty GPU": (79, 74, 143, 145),
    "GPU HBM3 Memory": (48, 95, 94, 64, 140),
    "GPU SRAM Memory": (172,),
    "GPU System Processor": (119, 120),
}
PARAMS = {"since": START.isoformat(), "until": END.isoformat()}

Event = tuple[str, datetime, str, str | None, int | None, float | None, str | None]
Xid = tuple[datetime, str, int, int]


def _insert(con: Any, job_events: list[Event], gpu_events: list[Xid]) -> None:
    if job_events:
        con.executemany(
            "INSERT INTO job_events (job_id, ts, event, host, gpu, value, detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            job_events,
        )
    if gpu_events:
        con.executemany(
            "INSERT INTO gpu_events (ts, host, gpu, uuid, kind, code, detail, metric, value, "
            "batch_id) SELECT ?, ?, ?, NULL, 'xid', x.xid, x.description, "
            "'DCGM_FI_DEV_XID_ERRORS', x.xid, 1 FROM xid_codes AS x WHERE x.xid = ?",
            [(ts, host, gpu, code) for ts, host, gpu, code in gpu_events],
        )


def llama3_events(seed: int = 54) -> tuple[list[Event], list[Xid]]:
    """The 419 interruptions, one every 54 days / 419 (3.09 h) in a random order of causes, and
    the records around them that must not count."""
    rng = random.Random(seed)
    causes = [cause for cause, _, count, _ in TABLE_5 for _ in range(count)]
    rng.shuffle(causes)
    step = (END - START) / TOTAL
    jobs: list[Event] = []
    xids: list[Xid] = []
    for i, cause in enumerate(causes):
        ts = START + step * (i + 0.5)
        host, gpu = rng.choice(HOSTS), rng.randrange(PER_HOST)
        if cause in XIDS:
            code = rng.choice(XIDS[cause])
            if i % 3 == 0:  # the job log has it too: before the next scrape, or after it
                logged = ts + timedelta(seconds=-20 if i % 2 else 40)
                jobs.append((JOB, logged, "xid_failure", host, gpu, code, None))
                if i % 9 == 0:  # and telemetry first sees the GPU 2 h later, the gauge still on it
                    ts += timedelta(hours=2)
            xids.append((ts, host, gpu, code))
            if i % 30 == 1:  # the same fault shows a second XID on another GPU of the host
                xids.append((ts + timedelta(seconds=30), host, (gpu + 1) % PER_HOST, code))
        else:
            detail = cause if i % 4 else f"  {cause.lower()} "  # as triage typed it
            jobs.append((JOB, ts, "interruption", host, None, None, detail))
            if i % 7 == 0:  # the same stop, logged by the scheduler too: the triage's cause wins
                jobs.append((JOB, ts + timedelta(seconds=5), "xid_failure", host, 0, 13, None))
    for k in range(40):  # between the interruptions, 1.5 h from any of them
        ts = START + step * (k * 10 + 1)
        host, gpu = rng.choice(HOSTS), rng.randrange(PER_HOST)
        if k % 2:
            xids.append((ts, host, gpu, rng.choice((63, 92, 13, 31))))  # stops nothing
        else:  # an XID the job went on after, logged after the scrape
            jobs.append((JOB, ts + timedelta(seconds=40), "xid", host, gpu, 94, None))
            xids.append((ts, host, gpu, 94))
    for hour in range(DAYS * 24):
        jobs.append(
            (JOB, START + timedelta(hours=hour, minutes=7), "checkpoint", None, None, 9, None)
        )
    # outside the 54 days
    xids.append((START - timedelta(days=1), HOSTS[0], 0, 79))
    jobs.append((JOB, END + timedelta(hours=1), "interruption", HOSTS[1], None, None, "CPU"))
    return jobs, xids


@pytest.fixture(scope="module")
def llama3(warehouses: Warehouses) -> Iterator[Engine]:
    """2,048 8-GPU hosts, one job on all of them for the 54 days, and the events."""
    with warehouses.engine() as engine:
        con = engine.con
        con.executemany(
            "INSERT INTO nodes (host, cluster, gpu_model, gpus) VALUES (?, 'rsc', 'H100', ?)",
            [(host, PER_HOST) for host in HOSTS],
        )
        con.execute(
            "INSERT INTO jobs (job_id, start_at, end_at, state, gpus, nodes, node_list) "
            "VALUES (?, ?, ?, 'COMPLETED', ?, ?, ?)",
            [JOB, START - timedelta(days=2), END + timedelta(days=2), GPUS, len(HOSTS), HOSTS],
        )
        _insert(con, *llama3_events())
        yield engine


def _rows(engine: Engine, **params: str) -> dict[str, dict[str, Any]]:
    cur = engine.cursor()
    try:
        table = run_analysis_table(cur, "interruption_causes", params)
    finally:
        cur.close()
    return {r["category"]: r for r in table.to_pylist()}


def test_every_cause_is_counted_as_table_5_counts_it(llama3: Engine) -> None:
    rows = _rows(llama3, **PARAMS)
    print(f"\n{'cause':32} {'component':22} {'ours':>5} {'share':>6} {'paper':>6} {'printed':>8}")
    for cause, component, count, printed in TABLE_5:
        row = rows[cause]
        print(
            f"{cause:32} {component:22} {row['interruptions']:5d} {row['share_pct']:6.1f} "
            f"{count:6d} {printed:7.1f}%"
        )
    total = rows["All causes"]
    print(f"{'All causes':32} {'':22} {total['interruptions']:5d} {total['share_pct']:6.1f}")
    assert {c: rows[c]["interruptions"] for c, *_ in TABLE_5} == {c: n for c, _, n, _ in TABLE_5}
    assert {c: rows[c]["component"] for c, *_ in TABLE_5} == {c: k for c, k, _, _ in TABLE_5}
    assert set(rows) == {c for c, *_ in TABLE_5} | {"Unattributed", "All causes"}
    assert rows["Unattributed"]["interruptions"] == 0
    assert total["interruptions"] == TOTAL == sum(n for _, _, n, _ in TABLE_5)


def test_shares_are_count_over_419_which_table_5_prints_but_for_faulty_gpu(llama3: Engine) -> None:
    rows = _rows(llama3, **PARAMS)
    for cause, _, count, printed in TABLE_5:
        assert rows[cause]["share_pct"] == round(100 * count / TOTAL, 1), cause
        assert rows[cause]["llama3_interruptions"] == count, cause
        assert rows[cause]["llama3_share_pct"] == round(100 * count / TOTAL, 1), cause
        if cause != "Faulty GPU":
            assert rows[cause]["share_pct"] == printed, cause
    # The one printed share that is not its count over 419: 148 / 419 = 35.3 %, printed 30.1 %.
    assert rows["Faulty GPU"]["share_pct"] == 35.3
    assert round(sum(p for *_, p in TABLE_5), 1) == 94.9  # the printed shares
    gpu = [c for c, k, _, _ in TABLE_5 if k == "GPU"]
    assert round(sum(p for c, _, _, p in TABLE_5 if c in gpu), 1) == 58.7  # the paper's text
    assert round(100 * sum(rows[c]["interruptions"] for c in gpu) / TOTAL, 1) == 64.0
    assert rows["All causes"]["share_pct"] == 100.0


def test_the_mtbf_is_the_one_gpu_mtbf_h_gives_for_419_in_54_days(llama3: Engine) -> None:
    hours = DAYS * 24
    for params in (PARAMS, {**PARAMS, "gpus": str(GPUS)}):  # the inventory's GPUs, or given
        rows = _rows(llama3, **params)
        total = rows["All causes"]
        assert (total["gpus"], total["hours"]) == (GPUS, hours)
        assert total["gpu_mtbf_h"] == round(gpu_mtbf_h(TOTAL, GPUS, hours)) == 50677
        assert total["fleet_mtbf_h"] == round(hours / TOTAL, 2) == 3.09  # one every 3 hours
        for cause, _, count, _ in TABLE_5:
            assert rows[cause]["gpu_mtbf_h"] == round(gpu_mtbf_h(count, GPUS, hours)), cause
    assert _rows(llama3, **PARAMS, cluster="rsc")["All causes"]["interruptions"] == TOTAL
    elsewhere = _rows(llama3, **PARAMS, cluster="elsewhere")["All causes"]
    assert (elsewhere["interruptions"], elsewhere["gpu_mtbf_h"]) == (0, None)


def test_the_reference_tables_are_table_5_and_give_every_xid_a_listed_cause(
    llama3: Engine,
) -> None:
    cur = llama3.cursor()
    try:
        causes = cur.sql(
            "SELECT cause, component, llama3_interruptions, llama3_printed_pct "
            "FROM interruption_causes WHERE llama3_interruptions IS NOT NULL"
        ).fetchall()
        unlisted = cur.sql(
            "SELECT x.xid FROM xid_codes AS x LEFT JOIN interruption_xids AS i USING (xid) "
            "LEFT JOIN interruption_causes AS c ON c.cause = i.cause WHERE c.cause IS NULL"
        ).fetchall()
        named = dict(cur.sql("SELECT xid, cause FROM interruption_xids").fetchall())
    finally:
        cur.close()
    assert sorted(causes) == sorted(TABLE_5)
    assert unlisted == []  # every XID 0-172 has a cause interruption_causes lists
    assert {x: named[x] for x in (48, 79, 74, 95, 119, 140, 172)} == {
        48: "GPU HBM3 Memory", 79: "Faulty GPU", 74: "Faulty GPU", 95: "GPU HBM3 Memory",
        119: "GPU System Processor", 140: "GPU HBM3 Memory", 172: "GPU SRAM Memory",
    }  # fmt: skip


# -- which records are one interruption ------------------------------------------------------

T0 = datetime(2026, 5, 1, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def small(warehouses: Warehouses) -> Iterator[Engine]:
    """Two 8-GPU hosts; a job runs on h1 all day, h2 is idle."""
    with warehouses.engine() as engine:
        engine.con.execute(
            "INSERT INTO nodes (host, cluster, gpus) VALUES ('h1', 'c', 8), ('h2', 'c', 8)"
        )
        engine.con.execute(
            "INSERT INTO jobs (job_id, start_at, end_at, state, gpus, node_list) "
            "VALUES ('j1', ?, ?, 'FAILED', 8, ['h1'])",
            [T0 - timedelta(hours=12), T0 + timedelta(hours=12)],
        )
        yield engine


def _counted(engine: Engine, job_events: list[Event], gpu_events: list[Xid]) -> dict[str, int]:
    """The non-zero counts of each category for these records alone (rolled back after)."""
    cur = engine.cursor()
    cur.execute("BEGIN TRANSACTION")
    try:
        _insert(cur, job_events, gpu_events)
        window = {"since": (T0 - timedelta(hours=6)).isoformat(),
                  "until": (T0 + timedelta(hours=6)).isoformat()}  # fmt: skip
        rows = run_analysis_table(cur, "interruption_causes", window).to_pylist()
    finally:
        cur.execute("ROLLBACK")
        cur.close()
    return {r["category"]: r["interruptions"] for r in rows if r["interruptions"]}


def _s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_an_xid_failure_and_the_gpu_event_of_its_xid_count_once(small: Engine) -> None:
    failure: Event = ("j1", _s(0), "xid_failure", "h1", 3, 79, None)
    xid: Xid = (_s(25), "h1", 3, 79)
    assert _counted(small, [failure], []) == {"Faulty GPU": 1, "All causes": 1}
    assert _counted(small, [], [xid]) == {"Faulty GPU": 1, "All causes": 1}
    assert _counted(small, [failure], [xid]) == {"Faulty GPU": 1, "All causes": 1}
    # the gauge still on 79 when telemetry next sees the GPU, an hour on: the same XID
    assert _counted(small, [failure], [(_s(3600), "h1", 3, 79)])["All causes"] == 1
    # ... but 79 on another GPU an hour on is another interruption
    assert _counted(small, [failure], [(_s(3600), "h1", 4, 79)])["All causes"] == 2


def test_a_host_s_xids_of_one_fault_count_once(small: Engine) -> None:
    xids: list[Xid] = [(_s(0), "h1", 2, 48), (_s(10), "h1", 2, 64), (_s(40), "h1", 5, 95)]
    assert _counted(small, [], xids) == {"GPU HBM3 Memory": 1, "All causes": 1}
    later: list[Xid] = [(_s(0), "h1", 2, 48), (_s(1800), "h1", 2, 64)]
    assert _counted(small, [], later) == {"GPU HBM3 Memory": 2, "All causes": 2}


def test_xids_that_stop_nothing_are_no_interruption(small: Engine) -> None:
    assert _counted(small, [], [(_s(0), "h1", 1, 63), (_s(900), "h1", 1, 92)]) == {}
    assert _counted(small, [], [(_s(0), "h2", 1, 79)]) == {}  # no job on h2
    went_on: Event = ("j1", _s(0), "xid", "h1", 1, 94, None)
    assert _counted(small, [went_on], [(_s(30), "h1", 1, 94)]) == {}


def test_triage_names_the_cause_else_the_xid_near_it(small: Engine) -> None:
    def stop(detail: str | None, seconds: float = 0) -> Event:
        return ("j1", _s(seconds), "interruption", "h1", None, None, detail)

    assert _counted(small, [stop("network switch/cable ")], []) == {
        "Network Switch/Cable": 1,
        "All causes": 1,
    }
    assert _counted(small, [stop("Cosmic ray")], []) == {"Cosmic ray": 1, "All causes": 1}
    assert _counted(small, [stop(None)], []) == {"Unattributed": 1, "All causes": 1}
    near: list[Xid] = [(_s(-60), "h1", 6, 31), (_s(90), "h1", 6, 119)]  # the interrupting one
    assert _counted(small, [stop("")], near) == {"GPU System Processor": 1, "All causes": 1}
    # a triage row and the scheduler's xid_failure of the same stop: once, the triage's cause
    both = [stop("Software Bug"), ("j1", _s(8), "xid_failure", "h1", 0, 79, None)]
    assert _counted(small, both, [(_s(30), "h1", 0, 79)]) == {"Software Bug": 1, "All causes": 1}
    # two stops of the job an hour apart are two
    assert _counted(small, [stop("SSD"), stop("SSD", 3600)], []) == {"SSD": 2, "All causes": 2}


def test_unlisted_triage_texts_keep_no_component(small: Engine) -> None:
    cur = small.cursor()
    cur.execute("BEGIN TRANSACTION")
    try:
        _insert(cur, [("j1", T0, "interruption", "h1", None, None, "Cosmic ray")], [])
        rows = {
            r["category"]: r for r in run_analysis_table(cur, "interruption_causes").to_pylist()
        }
    finally:
        cur.execute("ROLLBACK")
        cur.close()
    assert rows["Cosmic ray"]["component"] is None
    assert rows["Cosmic ray"]["llama3_interruptions"] is None
    assert rows["All causes"]["hours"] == 0.0  # one record: a window of no length
    assert rows["All causes"]["gpu_mtbf_h"] is None  # no exposure, no MTBF


def test_the_demo_lists_every_cause_and_a_total_of_them(demo_engine: Engine) -> None:
    cur = demo_engine.cursor()
    try:
        rows = run_analysis_table(cur, "interruption_causes").to_pylist()
        [(causes,)] = cur.sql("SELECT count(*) FROM interruption_causes").fetchall()
        [(gpus,)] = cur.sql("SELECT sum(gpus) FROM nodes").fetchall()
    finally:
        cur.close()
    *listed, total = rows
    assert total["category"] == "All causes" and len(listed) >= causes
    assert total["interruptions"] == sum(r["interruptions"] for r in listed)
    assert total["llama3_interruptions"] == TOTAL
    assert {r["gpus"] for r in rows} == {gpus}
