"""scontrol show job -d --oneliner → jobs and the GPU rows of job_gpus.

Where the shapes come from. `tests/warehouse/fixtures/scontrol_show_job.txt` is written by hand
as Slurm 24.05 prints it (src/scontrol/info_job.c, `_sprint_job_info`, at tag slurm-24-05-0-1):
the field order, `ReqTRES`/`AllocTRES` (split from `TRES` in 23.02, commit dfe8b06bc0), each
detail group as `  Nodes=%s CPU_IDs=%s Mem=%u GRES=%s` after `JOB_GRES`, which `--oneliner` sets
off by three spaces (one until 25.11, commit b04ec2ef66), and a trailing space. GRES detail is
`name[:type]:count(IDX:bitmap)` (src/slurmctld/gres_ctld.c, gres_ctld_job_build_details, 20.11
to 24.05; src/stepmgr/gres_stepmgr.c since). Its lines:

1. 4001  two whole nodes, one group `Nodes=gpu[001-002]`, OverSubscribe=NO, a job name and a
         Command with spaces; running, so EndTime is start + TimeLimit
2. 4002  a finished job sharing gpu003, `IDX:1,3`
3. 4003  two nodes with different CPUs and GPUs: two groups on one line
4. 4004  TIMEOUT, Reason=TimeLimit, ExitCode=0:15
5. 4100  the pending rest of array 4100: `ArrayTaskId=5-9%2` (xlate_array_task_str appends the
         throttle), NumNodes=1-1 (_sprint_range), AllocTRES=(null), backfill's StartTime and
         EndTime estimates, no detail groups (no job_resrcs)
6. 4102  task 2 of that array, untyped GRES count `gpu:h100:1(IDX:5)` on gpu003
7. 4200  het job component 0 (HetJobId/HetJobOffset/HetJobIdSet), CPUs only: `JOB_GRES=(null)`
         and an empty `GRES=`, as a real capture of a CPU job shows them (CEA's inti cluster,
         `Nodes=inti6023 CPU_IDs=208-215 Mem=7500 GRES=`, found by code search)
8. 4201  its component 1, with two GPUs and no BatchHost
9. 4300  a CPU job running for days: RunTime=4-00:02:03, TimeLimit=UNLIMITED, EndTime=Unknown
10. 4301 pending with TimeLimit=Partition_Limit, StartTime=Unknown
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from warehouse.errors import UserError
from warehouse.ingest import IngestResult, ReadOptions, ingest
from warehouse.ingest import scontrol_fields as sf
from warehouse.kernel.engine import Engine

CAPTURE = Path(__file__).parents[1] / "fixtures" / "scontrol_show_job.txt"
LINES = CAPTURE.read_text(encoding="utf-8").splitlines()


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def load(
    eng: Engine, folder: Path, text: str, *, name: str = "jobs.txt", **opts: Any
) -> IngestResult:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    [result] = ingest(eng, "scontrol", [str(path)], ReadOptions(**opts))
    return result


def rows(eng: Engine, sql: str) -> list[tuple[Any, ...]]:
    return eng.con.sql(sql).fetchall()


def job(eng: Engine, job_id: str) -> dict[str, Any]:
    cur = eng.con.execute("SELECT * EXCLUDE (batch_id) FROM jobs WHERE job_id = ?", [job_id])
    names = [d[0] for d in cur.description]
    [found] = cur.fetchall()
    return dict(zip(names, found, strict=True))


def gpus(eng: Engine) -> list[tuple[Any, ...]]:
    """(job, host, GPU indices, start, end) from the job_gpus view, scontrol's rows only."""
    return rows(
        eng,
        "SELECT job_id, host, list(gpu ORDER BY gpu), min(start_at), min(end_at) FROM job_gpus "
        "WHERE source = 'scontrol' AND exact GROUP BY ALL ORDER BY 1, 2",
    )


def edit(line: str, **fields: str) -> str:
    """`line` with some one-word fields set to other values."""
    for key, value in fields.items():
        line, n = re.subn(
            rf"(?<= ){re.escape(key)}=\S*|^{re.escape(key)}=\S*", f"{key}={value}", line
        )
        assert n == 1, key
    return line


# -- the capture -------------------------------------------------------------------------------


def test_the_capture_loads_every_job_and_its_gpus(eng: Engine) -> None:
    [result] = ingest(eng, "scontrol", [str(CAPTURE)], ReadOptions(cluster="ash-h100"))
    # GPUs by line: 8+8, 2, 4+4, 8, none (pending), 1, none (CPUs), 2, none, none.
    assert result.rows == {"jobs": 10, "gpu_attribution": 37} and result.rejected == 0
    assert [i for (i,) in rows(eng, "SELECT job_id FROM jobs ORDER BY 1")] == [
        "4001", "4002", "4003", "4004", "4100_2", "4100_[5-9%2]", "4200+0", "4200+1", "4300",
        "4301",
    ]  # fmt: skip
    assert job(eng, "4001") == {
        "job_id": "4001", "job_name": "llama-70b pretrain", "user": "alice", "account": "llm",
        "partition": "h100", "qos": "high", "cluster": "ash-h100",
        "submit_at": utc("2026-11-01T08:55:00"), "eligible_at": utc("2026-11-01T08:55:00"),
        "start_at": utc("2026-11-01T09:00:00"),
        "end_at": None,  # running: EndTime=2026-11-02T09:00:00 is when the limit runs out
        "elapsed_s": 3723.0, "state": "RUNNING", "state_reason": None, "gpus": 16,
        "gpu_type": "h100", "nodes": 2, "node_list": ["gpu001", "gpu002"], "cpus": 224,
        "exit_code": "0:0", "derived_exit_code": "0:0", "time_limit_s": 86400.0,
        "exclusive": True, "gpu_util_ave": None, "gpu_util_max": None, "gpu_mem_ave_mib": None,
        "gpu_mem_max_mib": None,
    }  # fmt: skip
    assert gpus(eng) == [
        ("4001", "gpu001", list(range(8)), utc("2026-11-01T09:00:00"), None),
        ("4001", "gpu002", list(range(8)), utc("2026-11-01T09:00:00"), None),
        ("4002", "gpu003", [1, 3], utc("2026-11-01T09:13:20"), utc("2026-11-01T09:58:30")),
        ("4003", "gpu004", [0, 1, 2, 3], utc("2026-11-01T09:30:00"), None),
        ("4003", "gpu005", [4, 5, 6, 7], utc("2026-11-01T09:30:00"), None),
        ("4004", "gpu008", list(range(8)), utc("2026-11-01T07:59:30"), utc("2026-11-01T09:59:43")),
        ("4100_2", "gpu003", [5], utc("2026-11-01T10:00:00"), None),
        ("4200+1", "gpu006", [0, 1], utc("2026-11-01T09:45:00"), None),
    ]
    assert rows(
        eng, "SELECT DISTINCT uuid, gpu_instance FROM job_gpus WHERE source = 'scontrol'"
    ) == [(None, None)]


def test_states_limits_and_times_of_jobs_not_running(eng: Engine) -> None:
    ingest(eng, "scontrol", [str(CAPTURE)])
    select = "SELECT state, state_reason, start_at, end_at, elapsed_s, time_limit_s, exclusive, "
    select += "gpus, nodes, node_list, exit_code FROM jobs WHERE job_id = "
    assert rows(eng, select + "'4004'") == [
        ("TIMEOUT", "TimeLimit", utc("2026-11-01T07:59:30"), utc("2026-11-01T09:59:43"), 7213.0,
         7200.0, False, 8, 1, ["gpu008"], "0:15"),
    ]  # fmt: skip
    # Pending: backfill's StartTime/EndTime are estimates, not stored; the GPUs asked for are.
    assert rows(eng, select + "'4100_[5-9%2]'") == [
        ("PENDING", "JobArrayTaskLimit", None, None, 0.0, 7200.0, False, 1, 1, None, "0:0")
    ]
    assert rows(eng, select + "'4300'") == [
        ("RUNNING", None, utc("2026-10-28T10:00:00"), None, 4 * 86400 + 123.0, None, False, 0, 1,
         ["cpu018"], "0:0"),
    ]  # fmt: skip
    assert rows(eng, select + "'4301'") == [
        ("PENDING", "Priority", None, None, 0.0, None, False, 0, 1, None, "0:0")
    ]


def test_the_same_capture_twice_is_stored_once(eng: Engine) -> None:
    [first] = ingest(eng, "scontrol", [str(CAPTURE)])
    jobs, held = rows(eng, "SELECT * EXCLUDE (batch_id) FROM jobs ORDER BY 1"), gpus(eng)
    [again] = ingest(eng, "scontrol", [str(CAPTURE)])
    assert again.duplicate_of == first.batch_id and again.total_rows == 0
    [forced] = ingest(eng, "scontrol", [str(CAPTURE)], force=True)
    assert forced.rows == {"jobs": 10, "gpu_attribution": 37}
    # A later capture of a job replaces what the earlier one said, GPUs included.
    assert rows(eng, "SELECT * EXCLUDE (batch_id) FROM jobs ORDER BY 1") == jobs
    assert gpus(eng) == held
    assert rows(eng, "SELECT count(*) FROM job_gpus WHERE source = 'scontrol'") == [(37,)]


def test_a_later_capture_ends_the_gpus_of_a_finished_job(eng: Engine, tmp_path: Path) -> None:
    load(eng, tmp_path, LINES[0] + "\n", name="10-02.txt")
    done = edit(LINES[0], JobState="COMPLETED", RunTime="03:00:00", EndTime="2026-11-01T12:00:00")
    load(eng, tmp_path, done + "\n", name="12-05.txt")
    assert job(eng, "4001")["end_at"] == utc("2026-11-01T12:00:00")
    assert {(h, end) for _, h, _, _, end in gpus(eng)} == {
        ("gpu001", utc("2026-11-01T12:00:00")),
        ("gpu002", utc("2026-11-01T12:00:00")),
    }
    assert rows(eng, "SELECT count(*) FROM job_gpus WHERE source = 'scontrol'") == [(16,)]


def test_a_job_twice_in_one_capture_keeps_the_last(eng: Engine, tmp_path: Path) -> None:
    moved = LINES[1].replace("IDX:1,3", "IDX:6-7")
    assert load(eng, tmp_path, f"{LINES[1]}\n{moved}\n").rows == {"jobs": 1, "gpu_attribution": 2}
    assert [g for _, _, g, _, _ in gpus(eng)] == [[6, 7]]


# -- other releases and shapes ------------------------------------------------------------------


def test_shapes_of_other_releases(eng: Engine, tmp_path: Path) -> None:
    base = LINES[1]  # 4002 on gpu003
    # 22.05 and before: one TRES field (src/api/job_info.c at slurm-22-05-0-1: "TRES=%s").
    old_tres = base.replace("ReqTRES=cpu=28,mem=500G,node=1,billing=28,gres/gpu=2 ", "")
    old_tres = old_tres.replace("AllocTRES=", "TRES=").replace("JobId=4002", "JobId=5001")
    # 17.02 to 20.02: no count, `gpu:tesla(IDX:0-1)`; 17.02 to 18.08 named it GRES_IDX (commit
    # 38ddfc1ec7 renamed it to GRES for 19.05).
    v19 = base.replace("JobId=4002", "JobId=5002").replace(
        "gpu:h100:2(IDX:1,3)", "gpu:tesla(IDX:0-1)"
    )
    v17 = base.replace("JobId=4002", "JobId=5003").replace(
        "GRES=gpu:h100:2(IDX:1,3)", "GRES_IDX=gpu(IDX:0)"
    )
    # 25.11: one space before a group, SubmitLine (words with '=' inside a value), LicensesAlloc.
    v25 = base.replace("JobId=4002", "JobId=5004").replace("   Nodes=", " Nodes=")
    v25 = v25.replace(
        "Network=(null)",
        "LicensesAlloc=(null) Network=(null) "
        "SubmitLine=sbatch --gres=gpu:2 --export=ALL,X=1 eval.sbatch",
    )
    # The node's GPUs in gres.conf order among other GRES; `(null)` for a type (21.08).
    mixed = base.replace("JobId=4002", "JobId=5005").replace(
        "gpu:h100:2(IDX:1,3)", "gpu:(null):2(IDX:4-5),nvme:1(IDX:0)"
    )
    # No indices to go by: a count only, or MIG slices (their IDX counts slices, not GPUs).
    counted = base.replace("JobId=4002", "JobId=5006").replace(
        "gpu:h100:2(IDX:1,3)", "gpu:h100(CNT:2)"
    )
    mig = base.replace("JobId=4002", "JobId=5007").replace(
        "gpu:h100:2(IDX:1,3)", "gpu:1g.10gb:1(IDX:3)"
    )
    text = "\n".join([old_tres, v19, v17, v25, mixed, counted, mig]) + "\n"
    assert load(eng, tmp_path, text).rejected == 0
    assert [(j, g) for j, _, g, _, _ in gpus(eng)] == [
        ("5001", [1, 3]), ("5002", [0, 1]), ("5003", [0]), ("5004", [1, 3]), ("5005", [4, 5]),
    ]  # fmt: skip
    assert job(eng, "5001")["gpus"] == 2 and job(eng, "5004")["job_name"] == "eval-ckpt"
    assert rows(eng, "SELECT count(*) FROM jobs") == [(7,)]


def test_exclusive_from_oversubscribe_or_exclusive(eng: Engine, tmp_path: Path) -> None:
    # Slurm 26.05 prints `OverSubscribe=%s Exclusive=%s` (commit cf78faa4b3): NO then means
    # "not oversubscribed", and only Exclusive=NODE holds whole nodes.
    line = LINES[1].replace("JobId=4002", "JobId={id}")
    new = line.replace("OverSubscribe=OK", "OverSubscribe=NO Exclusive={x}")
    text = "\n".join(
        [
            new.format(id=1, x="NODE"), new.format(id=2, x="NO"), new.format(id=3, x="USER"),
            line.format(id=4).replace("OverSubscribe=OK", "OverSubscribe=NO"),
            line.format(id=5).replace("OverSubscribe=OK", "OverSubscribe=USER"),
            line.format(id=6).replace("OverSubscribe=OK ", ""),
        ]
    )  # fmt: skip
    load(eng, tmp_path, text + "\n")
    assert rows(eng, "SELECT job_id, exclusive FROM jobs ORDER BY 1") == [
        ("1", True), ("2", False), ("3", False), ("4", True), ("5", False), ("6", None),
    ]  # fmt: skip


def test_output_without_oneliner_reads_the_same(eng: Engine, tmp_path: Path) -> None:
    # Without --oneliner scontrol breaks the line where the one-liner has single spaces between
    # groups of fields, indents by three (groups by five) and ends a job with a blank line.
    one = load(eng, tmp_path, LINES[2] + "\n", name="one.txt")
    flat = rows(eng, "SELECT * EXCLUDE (batch_id) FROM jobs"), gpus(eng)
    eng.con.execute("DELETE FROM jobs")
    eng.con.execute("DELETE FROM gpu_attribution")
    breaks = (
        "UserId=", "Priority=", "JobState=", "Requeue=", "DerivedExitCode=", "RunTime=",
        "SubmitTime=", "AccrueTime=", "StartTime=", "SuspendTime=", "Partition=", "ReqNodeList=",
        "NodeList=", "BatchHost=", "NumNodes=", "ReqTRES=", "AllocTRES=", "Socks/Node=",
        "JOB_GRES=", "MinCPUsNode=", "Features=", "OverSubscribe=", "Command=", "WorkDir=",
        "StdErr=", "StdIn=", "StdOut=", "Power=", "TresPerNode=",
    )  # fmt: skip
    text = LINES[2].strip()
    for key in breaks:
        text = text.replace(f" {key}", f"\n   {key}", 1)
    text = text.replace("   Nodes=", "\n     Nodes=")
    assert text.count("\n     Nodes=") == 2
    many = load(eng, tmp_path, text + "\n\n", name="many.txt")
    assert many.rows == one.rows and many.rejected == 0
    assert (rows(eng, "SELECT * EXCLUDE (batch_id) FROM jobs"), gpus(eng)) == flat


def test_times_are_read_in_the_given_zone(eng: Engine, tmp_path: Path) -> None:
    load(eng, tmp_path, LINES[1] + "\n", timezone="Europe/Berlin")
    assert job(eng, "4002")["start_at"] == utc("2026-11-01T08:13:20")  # CET is UTC+1
    assert gpus(eng)[0][3:] == (utc("2026-11-01T08:13:20"), utc("2026-11-01T08:58:30"))
    with pytest.raises(UserError, match="scontrol: unknown time zone 'Mars/Olympus'"):
        load(eng, tmp_path, LINES[1] + "\n", name="b.txt", timezone="Mars/Olympus")


# -- rejects -----------------------------------------------------------------------------------


def test_bad_lines_are_rejected_with_their_numbers(eng: Engine, tmp_path: Path) -> None:
    line = LINES[1]

    def as_job(n: int, old: str, new: str) -> str:
        changed = line.replace("JobId=4002", f"JobId={n}").replace(old, new)
        assert changed != line.replace("JobId=4002", f"JobId={n}")
        return changed

    text = "\n".join(
        [
            line,
            "JobName=orphan UserId=x(1) JobState=RUNNING",
            as_job(3, "StartTime=2026-11-01T09:13:20", "StartTime=2026-13-01T09:13:20"),
            as_job(4, "IDX:1,3", "IDX:3,1"),
            "",
            as_job(6, "gpu:h100:2(IDX:1,3)", "gpu:h100:2(IDX:1,3"),
            as_job(7, "RunTime=00:45:10", "RunTime=45 minutes"),
            as_job(8, "JobState=COMPLETED", "JobState=DONE"),
            as_job(9, "NodeList=gpu003", "NodeList=gpu[003"),
            as_job(10, "gpu:h100:2(IDX:1,3)", "gpu:h100:two(IDX:1,3)"),
            as_job(11, "TimeLimit=04:00:00", "TimeLimit=four hours"),
            "slurm_load_jobs error: Invalid job id specified",
            as_job(13, "JobId=13", "JobId=x13"),
            as_job(14, "gpu:h100:2(IDX:1,3)", "gpu:h100:2(IDX:0-4096)"),
            as_job(15, "IDX:1,3", "IDX:1,3-7"),
        ]
    )
    result = load(eng, tmp_path, text + "\n")
    assert result.rows == {"jobs": 1, "gpu_attribution": 2} and result.rejected == 13
    assert rows(eng, "SELECT job_id FROM jobs") == [("4002",)]
    found = rows(eng, "SELECT line, field, reason, raw FROM wanka.ingest_rejects ORDER BY line")
    assert [(n, field) for n, field, _, _ in found] == [
        (2, "JobId"), (3, "StartTime"), (4, "GRES"), (6, "GRES"), (7, "RunTime"),
        (8, "JobState"), (9, "NodeList"), (10, "GRES"), (11, "TimeLimit"), (12, "JobId"),
        (13, "JobId"), (14, "GRES"), (15, "GRES"),
    ]  # fmt: skip
    reasons = {n: reason for n, _, reason, _ in found}
    assert reasons[2] == "no JobId= field: expected scontrol show job -d --oneliner output"
    assert reasons[3] == "StartTime: not a time like 2026-11-01T10:00:00: '2026-13-01T09:13:20'"
    assert reasons[4] == "GRES: index list '3,1': '1' is out of order"
    assert reasons[6] == "GRES: 'gpu:h100:2(IDX:1,3': '(' is never closed"
    assert reasons[8] == "JobState: not a Slurm job state: 'DONE'"
    assert reasons[10] == "GRES: 'gpu:h100:two(IDX:1,3)': GPU count 'two' is not a whole number"
    assert reasons[15] == "GRES: 'gpu:h100:2(IDX:1,3-7)': 2 GPUs, but IDX lists 6"
    assert (
        reasons[13]
        == "JobId 'x13' is not a job number: expected scontrol show job -d --oneliner output"
    )
    assert found[0][3] == "JobName=orphan UserId=x(1) JobState=RUNNING"
    assert found[1][3] == text.splitlines()[2]


def test_a_capture_where_nothing_reads_stores_nothing(eng: Engine, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"nothing could be read as Slurm scontrol.*line 1"):
        load(eng, tmp_path, "JobName=a\nsqueue: error: slurm_receive_msg\n")
    assert rows(eng, "SELECT count(*) FROM wanka.ingest_batches") == [(0,)]
    # An empty queue is a capture too: scontrol says so, and nothing is stored.
    result = load(eng, tmp_path, "No jobs in the system\n", name="empty.txt")
    assert result.rows == {} and result.rejected == 0 and result.batch_id is not None


# -- properties ---------------------------------------------------------------------------------

_index_sets = st.sets(st.integers(0, sf.MAX_INDEX), max_size=64)


@given(_index_sets, st.sampled_from(["gpu:h100:{n}", "gpu:{n}", "gpu:a100", "gpu"]))
def test_gres_index_lists_round_trip(wanted: set[int], head: str) -> None:
    text = sf.index_text(wanted)
    assert sf.indices(text) == sorted(wanted)
    gres = f"{head.format(n=len(wanted))}(IDX:{text}),nvme:1(IDX:0)" if wanted else "gpu:0"
    assert sf.gpu_indices(gres) == sorted(wanted)


@settings(max_examples=examples(0.5), deadline=None)
@given(st.text(alphabet="0123456789-,:()IDXgpuN/A ", max_size=24))
def test_gres_text_reads_or_says_why(text: str) -> None:
    try:
        found = sf.gpu_indices(text)
    except ValueError as error:
        assert str(error)
    else:
        assert found == sorted(set(found)) and all(0 <= i <= sf.MAX_INDEX for i in found)
