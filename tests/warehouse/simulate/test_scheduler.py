"""The job log: placement never oversubscribes, states are Slurm's, failures follow XIDs."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from datetime import datetime
from typing import Any

import pytest

from warehouse.simulate import SimulatedCluster

from .conftest import SMALL


def _seconds(value: datetime | None) -> float:
    return math.inf if value is None else value.timestamp()


def test_no_host_is_ever_oversubscribed(small: SimulatedCluster) -> None:
    changes: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for job in small.jobs.to_pylist():
        if job["start_at"] is None:
            continue
        per_host = job["gpus"] if job["nodes"] == 1 else 8
        for host in job["node_list"]:
            changes[host].append((_seconds(job["start_at"]), per_host))
            changes[host].append((_seconds(job["end_at"]), -per_host))
    assert changes
    down = {n["host"] for n in small.nodes.to_pylist() if n["state"] == "down"}
    assert not down & set(changes)
    for host, steps in changes.items():
        in_use = 0
        for _, delta in sorted(steps, key=lambda s: (s[0], s[1])):  # frees first at a tie
            in_use += delta
            assert 0 <= in_use <= 8, host


def test_multi_node_jobs_take_whole_nodes(small: SimulatedCluster) -> None:
    jobs = [j for j in small.jobs.to_pylist() if j["node_list"]]
    multi = [j for j in jobs if j["gpus"] > 8]
    assert multi
    for job in multi:
        assert job["gpus"] == 8 * len(job["node_list"]) == 8 * job["nodes"]
        assert len(set(job["node_list"])) == job["nodes"]
    for job in jobs:
        if job["gpus"] <= 8:
            assert job["nodes"] == 1 and len(job["node_list"]) == 1


def test_sizes_are_heavy_tailed(small: SimulatedCluster) -> None:
    sizes = small.jobs["gpus"].to_pylist()
    assert set(sizes) <= {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
    assert sum(s <= 8 for s in sizes) > 0.7 * len(sizes)
    assert max(sizes) >= 32


def test_states_carry_the_fields_slurm_gives_them(small: SimulatedCluster) -> None:
    jobs = small.jobs.to_pylist()
    states = {j["state"] for j in jobs}
    assert {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "RUNNING", "PENDING"} <= states
    window_end = SMALL.start.timestamp() + SMALL.hours * 3600
    for job in jobs:
        assert re.fullmatch(r"\d+:\d+", job["exit_code"])
        if job["state"] == "RUNNING":
            assert job["start_at"] is not None and job["end_at"] is None
        elif job["state"] == "PENDING":
            assert job["start_at"] is None and job["end_at"] is None
        else:
            assert job["end_at"] is not None and job["end_at"].timestamp() <= window_end
        if job["state"] == "CANCELLED":
            assert re.fullmatch(r"by \d+", job["state_reason"])
        else:
            assert job["state_reason"] is None
        if job["state"] == "COMPLETED":
            assert job["exit_code"] == "0:0"
        if job["start_at"] is not None:
            assert job["start_at"] >= job["submit_at"]
            end = job["end_at"].timestamp() if job["end_at"] else window_end
            assert job["elapsed_s"] == pytest.approx(end - job["start_at"].timestamp())


def test_queue_waits_emerge(small: SimulatedCluster) -> None:
    waits = [
        (j["start_at"] - j["submit_at"]).total_seconds()
        for j in small.jobs.to_pylist()
        if j["start_at"] is not None
    ]
    assert sum(w > 0 for w in waits) > 0.02 * len(waits)
    assert all(w >= 0 for w in waits)


def test_every_started_slurm_job_has_batch_extern_and_step_0(small: SimulatedCluster) -> None:
    scheduler = {c["cluster"]: c["scheduler"] for c in small.clusters.to_pylist()}
    steps: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for step in small.job_steps.to_pylist():
        steps[step["job_id"]][step["step_id"]] = step
    for job in small.jobs.to_pylist():
        started = job["start_at"] is not None
        if scheduler[job["cluster"]] == "kubernetes":
            assert job["job_id"] not in steps and not job["job_id"].isdigit()
            assert job["partition"] == job["account"]  # the namespace
            continue
        assert set(steps.get(job["job_id"], {})) == ({"batch", "extern", "0"} if started else set())
        if started:
            mine = steps[job["job_id"]]
            assert mine["batch"]["node_list"] == job["node_list"][:1]
            assert mine["0"]["node_list"] == mine["extern"]["node_list"] == job["node_list"]
            assert mine["0"]["gpus"] == job["gpus"]


def test_fatal_xids_end_the_jobs_on_their_gpus(failure_prone: SimulatedCluster) -> None:
    jobs = {j["job_id"]: j for j in failure_prone.jobs.to_pylist()}
    events = failure_prone.job_events.to_pylist()
    failures = [e for e in events if e["event"] == "xid_failure"]
    assert len(failures) >= 3
    for event in failures:
        job = jobs[event["job_id"]]
        assert event["value"] in (79, 48, 74, 95)
        assert job["end_at"] == event["ts"]
        assert job["state"] == ("NODE_FAIL" if event["value"] == 79 else "FAILED")
        assert event["host"] in job["node_list"] and 0 <= event["gpu"] < 8
    failed_by_xid = {e["job_id"] for e in failures}
    node_fails = {j["job_id"] for j in jobs.values() if j["state"] == "NODE_FAIL"}
    assert node_fails and node_fails <= failed_by_xid
    for event in events:
        if event["event"] == "xid":  # non-fatal: the job ran on, or crashed by itself
            assert event["value"] not in (79, 48, 74, 95)


def test_default_failure_rate_is_rare(small: SimulatedCluster) -> None:
    failures = [e for e in small.job_events.to_pylist() if e["event"] == "xid_failure"]
    assert len(failures) <= 3


def test_multi_node_jobs_checkpoint_every_half_hour_to_hour(small: SimulatedCluster) -> None:
    jobs = {j["job_id"]: j for j in small.jobs.to_pylist()}
    saves: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in small.job_events.to_pylist():
        if event["event"] == "checkpoint":
            saves[event["job_id"]].append(event)
    assert saves
    for job_id, mine in saves.items():
        job = jobs[job_id]
        assert job["nodes"] > 1
        times = [e["ts"].timestamp() for e in mine]
        start = job["start_at"].timestamp()
        end = job["end_at"].timestamp() if job["end_at"] else math.inf
        assert all(start < t < end for t in times)
        gaps = {round(b - a) for a, b in zip([start, *times], times, strict=False)}
        assert len(gaps) == 1 and 1800 <= gaps.pop() <= 3600
        assert all(0 < e["value"] < 1800 for e in mine)
