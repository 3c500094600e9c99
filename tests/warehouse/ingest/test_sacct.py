"""sacct --parsable2 → jobs and job_steps: the real dump, the corner cases, the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.warehouse.ingest.sacct_support import job, load, rows, utc
from warehouse.errors import UserError
from warehouse.ingest import ingest
from warehouse.kernel.engine import Engine

HEADER = (
    "JobID|JobName|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|State|"
    "ExitCode|DerivedExitCode|AllocNodes|AllocCPUS|AllocTRES|NodeList"
)
JOB = (
    "{id}|train|alice|llm|h100|normal|2026-11-01T10:00:00|2026-11-01T10:00:00|"
    "2026-11-01T10:05:00|{end}|{elapsed}|{state}|0:0|0:0|2|128|"
    "billing=128,cpu=128,gres/gpu:h100=16,mem=2048G,node=2|gpu[001-002]"
)


# -- the real dump -------------------------------------------------------------------------------


def test_real_dump_loads_every_job_and_step(eng: Engine, shared_data: Path) -> None:
    path = shared_data / "slurm" / "sacct-output-v2.txt"
    [result] = ingest(eng, "sacct", [str(path)])
    # Counted by hand (awk -F'|' on the file): 878 lines, 846 of 25 fields and 32 of 26 (the
    # 26th is Partition); JobID without a dot on 483 lines (all distinct), `<id>.batch` on 395.
    # Jobs by state: 261 OUT_OF_MEMORY, 129 FAILED, 91 'CANCELLED by 32874', 2 COMPLETED.
    assert result.rows == {"jobs": 483, "job_steps": 395} and result.rejected == 0
    assert rows(eng, "SELECT count(DISTINCT job_id) FROM jobs") == [(483,)]
    assert rows(eng, "SELECT state, state_reason, count(*) FROM jobs GROUP BY ALL ORDER BY 3") == [
        ("COMPLETED", None, 2),
        ("CANCELLED", "by 32874", 91),
        ("FAILED", None, 129),
        ("OUT_OF_MEMORY", None, 261),
    ]
    # Line 1: OUT_OF_MEMORY|67108865|1|100M|1||2022-02-18T17:32:41|2022-02-18T17:34:42|
    #   2022-02-18T17:36:39|00:05:16|00:00:00|2022-02-18T17:41:55|0:125|0:0|1|1||||||00:05:16|
    #   01:07.402|01:03.182|02:10.584|partition1
    first = job(eng, "67108865")
    assert first | {"batch_id": None} == first | {
        "state": "OUT_OF_MEMORY",
        "state_reason": None,
        "submit_at": utc("2022-02-18T17:32:41"),
        "eligible_at": utc("2022-02-18T17:34:42"),
        "start_at": utc("2022-02-18T17:36:39"),
        "end_at": utc("2022-02-18T17:41:55"),
        "elapsed_s": 316.0,
        "exit_code": "0:125",
        "derived_exit_code": "0:0",
        "nodes": 1,
        "cpus": 1,
        "partition": "partition1",
        "gpus": None,
        "node_list": None,
        "batch_id": None,
    }
    # Line 2, the step: MaxRSS 114944K, TotalCPU 02:10.584.
    assert rows(
        eng,
        "SELECT step_id, state, max_rss_bytes, total_cpu_s, elapsed_s FROM job_steps "
        "WHERE job_id = '67108865'",
    ) == [("batch", "OUT_OF_MEMORY", 114944 * 1024, 130.584, 316.0)]
    # 67108880 is on a 25-field line: no Partition.
    assert job(eng, "67108880")["partition"] is None
    assert rows(eng, "SELECT count(*) FROM jobs WHERE partition IS NULL") == [(483 - 16,)]


# -- layouts ---------------------------------------------------------------------------------


def test_header_and_columns_give_the_same_jobs(eng: Engine, tmp_path: Path) -> None:
    body = JOB.format(id="7", end="2026-11-01T11:00:00", elapsed="00:55:00", state="COMPLETED")
    load(eng, tmp_path, f"{HEADER}\n{body}\n", name="with-header.txt")
    with_header = rows(eng, "SELECT * EXCLUDE (batch_id) FROM jobs")
    eng.con.execute("DELETE FROM jobs")
    result = load(
        eng, tmp_path, body + "\n", name="no-header.txt", columns=tuple(HEADER.split("|"))
    )
    assert result.rows == {"jobs": 1}
    assert rows(eng, "SELECT * EXCLUDE (batch_id) FROM jobs") == with_header
    found = job(eng, "7")
    assert {k: found[k] for k in ("user", "account", "partition", "qos", "job_name")} == {
        "user": "alice", "account": "llm", "partition": "h100", "qos": "normal",
        "job_name": "train",
    }  # fmt: skip
    assert (found["gpus"], found["gpu_type"], found["nodes"], found["cpus"]) == (16, "h100", 2, 128)


def test_cluster_from_the_output_else_from_the_option(eng: Engine, tmp_path: Path) -> None:
    text = "JobID|Cluster|State\n1|ash-h100|COMPLETED\n2||COMPLETED\n"
    load(eng, tmp_path, text, cluster="default")
    assert rows(eng, "SELECT job_id, cluster FROM jobs ORDER BY 1") == [
        ("1", "ash-h100"),
        ("2", "default"),
    ]


def test_parsable_with_trailing_bar(eng: Engine, tmp_path: Path) -> None:
    text = "JobID|State|NodeList|\n5|COMPLETED|gpu01|\n6|FAILED||\n"
    assert load(eng, tmp_path, text).rows == {"jobs": 2}
    assert rows(eng, "SELECT job_id, state, node_list FROM jobs ORDER BY 1") == [
        ("5", "COMPLETED", ["gpu01"]),
        ("6", "FAILED", None),
    ]


def test_default_layout_takes_25_or_26_fields(eng: Engine, tmp_path: Path) -> None:
    common = (
        "COMPLETED|{id}|1|1G|1||2022-02-18T17:32:41|2022-02-18T17:32:41|2022-02-18T17:32:41|"
        "00:01:00|00:00:00|2022-02-18T17:33:41|0:0|0:0|1|1||||||00:01:00|00:00.1|00:00.1|00:00.2"
    )
    text = f"{common.format(id=1)}\n{common.format(id=2)}|gpu\n{common.format(id=3)}|gpu|x\n"
    result = load(eng, tmp_path, text)
    assert result.rows == {"jobs": 2} and result.rejected == 1
    assert rows(eng, "SELECT job_id, partition FROM jobs ORDER BY 1") == [("1", None), ("2", "gpu")]
    assert rows(eng, "SELECT line, reason FROM wanka.ingest_rejects") == [
        (3, "expected 25 to 26 fields separated by '|', found 27")
    ]


def test_unknown_column_name_is_a_usage_error(eng: Engine, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="unknown field 'Stat'"):
        load(eng, tmp_path, "1|COMPLETED\n", columns=("JobID", "Stat"))
    with pytest.raises(UserError, match="must include JobID"):
        load(eng, tmp_path, "COMPLETED\n", name="b.txt", columns=("State",))


# -- values ------------------------------------------------------------------------------------


def test_states_times_and_durations(eng: Engine, tmp_path: Path) -> None:
    text = "\n".join(
        [
            "JobID|State|Start|End|Elapsed|ExitCode",
            "1|CANCELLED by 1234|2026-11-01T10:00:00|2026-11-01T11:00:00|01:00:00|0:15",
            "2|RUNNING|2026-11-01T10:00:00|Unknown|2-03:04:05|0:0",
            "3|PENDING|Unknown|None|00:00:00|0:0",
            "4|NODE_FAIL|2026-11-01T10:00:00||05:16|1:0",
            "5|OUT_OF_MEMORY|||01:07.402|0:125",
        ]
    )
    assert load(eng, tmp_path, text + "\n").rejected == 0
    assert rows(
        eng, "SELECT job_id, state, state_reason, start_at, end_at, elapsed_s FROM jobs ORDER BY 1"
    ) == [
        ("1", "CANCELLED", "by 1234", utc("2026-11-01T10:00"), utc("2026-11-01T11:00"), 3600.0),
        ("2", "RUNNING", None, utc("2026-11-01T10:00"), None, 2 * 86400 + 3 * 3600 + 245.0),
        ("3", "PENDING", None, None, None, 0.0),
        ("4", "NODE_FAIL", None, utc("2026-11-01T10:00"), None, 316.0),
        ("5", "OUT_OF_MEMORY", None, None, None, 67.402),
    ]


def test_step_sizes_and_cpu_times(eng: Engine, tmp_path: Path) -> None:
    text = "\n".join(
        [
            "JobID|State|MaxRSS|TotalCPU",
            "1|COMPLETED||1-02:00:00",
            "1.batch|COMPLETED|114944K|02:10.584",
            "1.0|COMPLETED|0.07M|01:00:00",
            "1.1|COMPLETED|2G|00:00.002",
            "1.2|COMPLETED|1248|00:01",
        ]
    )
    assert load(eng, tmp_path, text + "\n").rejected == 0
    assert rows(eng, "SELECT step_id, max_rss_bytes, total_cpu_s FROM job_steps ORDER BY 1") == [
        ("0", round(0.07 * 2**20), 3600.0),
        ("1", 2 * 2**30, 0.002),
        ("2", 1248, 1.0),
        ("batch", 114944 * 1024, 130.584),
    ]


def test_times_are_read_in_the_given_zone(eng: Engine, tmp_path: Path) -> None:
    text = "JobID|Submit\n1|2026-07-01T12:00:00\n"
    load(eng, tmp_path, text, timezone="Europe/Berlin")
    assert job(eng, "1")["submit_at"] == utc("2026-07-01T10:00:00")
    with pytest.raises(UserError, match="unknown time zone 'Mars/Olympus'"):
        load(eng, tmp_path, text, name="b.txt", timezone="Mars/Olympus")


def test_array_tasks_het_jobs_and_steps(eng: Engine, tmp_path: Path) -> None:
    ids = ["123", "123.batch", "123.extern", "123.0", "124_4", "124_4.0", "124_[5-9%2]", "125+0",
           "125+1", "125+0.batch"]  # fmt: skip
    text = "JobID|State\n" + "".join(f"{i}|COMPLETED\n" for i in ids)
    assert load(eng, tmp_path, text).rows == {"jobs": 5, "job_steps": 5}
    assert rows(eng, "SELECT job_id FROM jobs ORDER BY 1") == [
        ("123",), ("124_4",), ("124_[5-9%2]",), ("125+0",), ("125+1",)
    ]  # fmt: skip
    assert rows(eng, "SELECT job_id, step_id FROM job_steps ORDER BY 1, 2") == [
        ("123", "0"), ("123", "batch"), ("123", "extern"), ("124_4", "0"), ("125+0", "batch")
    ]  # fmt: skip


def test_gpus_from_tres_and_gres(eng: Engine, tmp_path: Path) -> None:
    text = "\n".join(
        [
            "JobID|State|AllocTRES|ReqTRES|AllocGRES",
            "1|COMPLETED|billing=64,cpu=64,gres/gpu=8,mem=512G,node=1||",
            "2|COMPLETED|billing=64,cpu=64,gres/gpu:h100=8,mem=512G,node=1||",
            "3|COMPLETED|cpu=16,gres/gpu=4,gres/gpu:a100=4,node=1||",
            "4|PENDING||cpu=32,gres/gpu:h200=4,node=1|",
            "5|COMPLETED|cpu=8,mem=64G,node=1||",
            "6|COMPLETED|||gpu:tesla:2(IDX:0-1)",
        ]
    )
    assert load(eng, tmp_path, text + "\n").rejected == 0
    assert rows(eng, "SELECT job_id, gpus, gpu_type FROM jobs ORDER BY 1") == [
        ("1", 8, None), ("2", 8, "h100"), ("3", 4, "a100"), ("4", 4, "h200"), ("5", 0, None),
        ("6", 2, "tesla"),
    ]  # fmt: skip


def test_host_lists_are_expanded(eng: Engine, tmp_path: Path) -> None:
    text = "\n".join(
        [
            "JobID|State|NodeList",
            "1|COMPLETED|gpu[001-003,007]",
            "2|COMPLETED|a[01-02],b7,c[9-10]",
            "3|COMPLETED|rack[1-2]-n[01-02]",
            "4|PENDING|None assigned",
            "5|COMPLETED|gpu[001-003,007]",
        ]
    )
    load(eng, tmp_path, text + "\n")
    assert rows(eng, "SELECT job_id, node_list FROM jobs ORDER BY 1") == [
        ("1", ["gpu001", "gpu002", "gpu003", "gpu007"]),
        ("2", ["a01", "a02", "b7", "c9", "c10"]),
        ("3", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
        ("4", None),
        ("5", ["gpu001", "gpu002", "gpu003", "gpu007"]),
    ]


# -- rejects ----------------------------------------------------------------------------------


def test_bad_lines_are_rejected_with_their_numbers(eng: Engine, tmp_path: Path) -> None:
    text = "\r\n".join(
        [
            "JobID|State|Start|AllocTRES|NodeList",
            "1|COMPLETED|2026-11-01T10:00:00|gres/gpu=8|gpu01",
            "",
            "2|COMPLETED|2026-11-01T10:00:00|gres/gpu=8",
            "3|COMPLETED|2026-13-01T10:00:00|gres/gpu=8|gpu01",
            "4|FINISHED|2026-11-01T10:00:00|gres/gpu=8|gpu01",
            "x5|COMPLETED|2026-11-01T10:00:00|gres/gpu=8|gpu01",
            "6|COMPLETED|2026-11-01T10:00:00|gres/gpu=eight|gpu01",
            "7|COMPLETED|2026-11-01T10:00:00|gres/gpu=8|gpu[01-",
            "8|COMPLETED|2026-11-01T10:00:00|gres/gpu=8|gpu01|extra",
            "9|COMPLETED|2026-11-01T10:00:00|gres/gpu=8|gpu01",
        ]
    )
    result = load(eng, tmp_path, text + "\r\n")
    assert result.rows == {"jobs": 2} and result.rejected == 7
    assert rows(eng, "SELECT job_id FROM jobs ORDER BY 1") == [("1",), ("9",)]
    rejects = rows(eng, "SELECT line, field, raw, reason FROM wanka.ingest_rejects ORDER BY line")
    assert [(line, field) for line, field, _, _ in rejects] == [
        (4, None), (5, "Start"), (6, "State"), (7, "JobID"), (8, "AllocTRES"), (9, "NodeList"),
        (10, None),
    ]  # fmt: skip
    assert rejects[0][2:] == (
        "2|COMPLETED|2026-11-01T10:00:00|gres/gpu=8",
        "expected 5 fields separated by '|', found 4",
    )
    assert rejects[1][3] == "not a time like 2022-02-18T17:32:41: '2026-13-01T10:00:00'"
    assert rejects[2][3] == "not a Slurm job state: 'FINISHED'"
    assert rejects[4][3] == "GPU count 'eight' in 'gres/gpu=eight' is not a whole number"
    assert "'[' is never closed" in rejects[5][3]


def test_a_file_where_nothing_parses_stores_nothing(eng: Engine, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"nothing could be read as Slurm sacct.*line 1"):
        load(eng, tmp_path, "this is not|sacct output\nnor|is|this\n")
    assert rows(eng, "SELECT count(*) FROM jobs") == [(0,)]
    assert rows(eng, "SELECT count(*) FROM wanka.ingest_batches") == [(0,)]
    assert rows(eng, "SELECT count(*) FROM wanka.ingest_rejects") == [(0,)]


# -- one row per job ---------------------------------------------------------------------------


def test_an_updated_dump_replaces_the_job(eng: Engine, tmp_path: Path) -> None:
    running = JOB.format(id="42", end="Unknown", elapsed="00:30:00", state="RUNNING")
    done = JOB.format(id="42", end="2026-11-01T12:00:00", elapsed="01:55:00", state="COMPLETED")
    other = JOB.format(id="43", end="Unknown", elapsed="00:10:00", state="RUNNING")
    load(eng, tmp_path, f"{HEADER}\n{running}\n{running.replace('42|', '42.0|', 1)}\n{other}\n")
    load(eng, tmp_path, f"{HEADER}\n{done}\n{done.replace('42|', '42.0|', 1)}\n", name="later.txt")
    assert rows(eng, "SELECT job_id, state, end_at, elapsed_s FROM jobs ORDER BY 1") == [
        ("42", "COMPLETED", utc("2026-11-01T12:00:00"), 6900.0),
        ("43", "RUNNING", None, 600.0),
    ]
    assert rows(eng, "SELECT job_id, step_id, state FROM job_steps") == [("42", "0", "COMPLETED")]


def test_a_job_twice_in_one_dump_keeps_the_last_line(eng: Engine, tmp_path: Path) -> None:
    text = "JobID|State\n9|REQUEUED\n9|RUNNING\n9.batch|CANCELLED\n9.batch|RUNNING\nJobID|State\n"
    assert load(eng, tmp_path, text).rejected == 0  # a repeated header line is skipped
    assert rows(eng, "SELECT job_id, state FROM jobs") == [("9", "RUNNING")]
    assert rows(eng, "SELECT step_id, state FROM job_steps") == [("batch", "RUNNING")]
