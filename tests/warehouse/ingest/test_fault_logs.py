"""`wanka ingest faults`: fault traces, ticket exports and Slurm's drained nodes → node_faults.

The Slurm captures in tests/warehouse/fixtures/ are written by hand in the shapes Slurm prints:
`sinfo -R` with its default format `%20E %9u %19H %N` (sinfo(1), --list-reasons), and
`scontrol show node` records (a NodeName= line, indented lines, `Reason=text [user@time]` as
src/scontrol/info_node.c prints it; gpu010 as --oneliner prints it).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.ingest import ReadOptions, ingest
from warehouse.kernel.engine import Engine

FIXTURES = Path(__file__).parents[1] / "fixtures"


def rows(eng: Engine, sql: str) -> list[tuple[object, ...]]:
    cur = eng.cursor()
    try:
        return cur.execute(sql).fetchall()
    finally:
        cur.close()


def rejects(eng: Engine) -> list[tuple[object, ...]]:
    return rows(eng, "SELECT line, field, reason FROM wanka.ingest_rejects ORDER BY line")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_infinitehbd_trace_goes_in_whole_and_once(eng: Engine, shared_data: Path) -> None:
    trace = str(shared_data / "infinitehbd" / "fault_trace.json")
    [first] = ingest(eng, "faults", [trace])
    assert first.rows == {"node_faults": 584} and first.rejected == 0
    found = rows(
        eng,
        "SELECT count(*), count(DISTINCT node), count(end_at), min(start_at), "
        "count(*) FILTER (WHERE class = 'GPU'), count(*) FILTER (WHERE level IS NULL) "
        "FROM node_faults",
    )
    # every fault closed; 158 GPU faults as fault_statistics.json counts them; event_time 3.8955
    # days after 2024-03-30 is the first
    assert found[0][:3] == (584, 231, 584)
    assert found[0][3] == datetime(2024, 4, 2, 21, 29, 31, 200000, tzinfo=UTC)
    assert found[0][4:] == (158, 0)
    [again] = ingest(eng, "faults", [trace])
    assert again.duplicate_of == first.batch_id
    assert rows(eng, "SELECT count(*) FROM node_faults") == [(584,)]
    classes = json.loads((shared_data / "infinitehbd" / "fault_statistics.json").read_text())
    expected = {
        (level, cls): body["ClassTotal"]
        for level, by_class in classes.items()
        for cls, body in by_class.items()
        if isinstance(body, dict)
    }
    by_class = "SELECT level, class, count(*) FROM node_faults GROUP BY ALL"
    stored = {(level, cls): n for level, cls, n in rows(eng, by_class)}
    assert stored == expected


CSV = """node,start,end,kind,description
gpu001,2024-05-01T10:00:00Z,2024-05-01T12:00:00Z,GPU,XID 79
gpu001,2024-05-01T11:00:00Z,2024-05-01T15:00:00Z,GPU,XID 79 again (same ticket)
gpu001,2024-05-01T11:30:00Z,,NIC,link flap
gpu002,2024-05-03T00:00:00Z,2024-05-02T00:00:00Z,PSU,replaced
rack9-n7,1714600000,1714700000,Fan,fan 3 slow
gpu003,yesterday,,GPU,?
"""


def test_csv_checks_merges_and_keeps_unknown_nodes(eng: Engine, tmp_path: Path) -> None:
    [result] = ingest(eng, "faults", [write(tmp_path, "tickets.csv", CSV)])
    assert result.rows == {"node_faults": 3}
    stored = rows(
        eng, "SELECT node, class, start_at, end_at, source FROM node_faults ORDER BY node, class"
    )

    def utc(hour: int) -> datetime:
        return datetime(2024, 5, 1, hour, tzinfo=UTC)

    assert stored[:2] == [
        ("gpu001", "GPU", utc(10), utc(15), "csv"),  # lines 2 and 3: one fault
        ("gpu001", "NIC", datetime(2024, 5, 1, 11, 30, tzinfo=UTC), None, "csv"),  # open
    ]
    assert stored[2][0] == "rack9-n7" and stored[2][2] == datetime.fromtimestamp(1714600000, UTC)
    said = rejects(eng)
    assert [(line, field) for line, field, _ in said] == [(3, "merged"), (5, "end"), (7, "start")]
    assert "before start" in str(said[1][2]) and "'yesterday'" in str(said[2][2])
    # an unknown node is kept, and joins the inventory once the inventory names it
    joined = "SELECT count(*) FROM node_faults f JOIN nodes n ON n.host = f.node"
    assert rows(eng, joined) == [(0,)]
    cur = eng.cursor()
    cur.execute("INSERT INTO nodes (host, cluster, gpus) VALUES ('rack9-n7', 'c1', 8)")
    cur.close()
    assert rows(eng, joined) == [(1,)]


def test_ndjson_form(eng: Engine, tmp_path: Path) -> None:
    lines = [
        {"node": "n1", "start": "2024-06-01 08:00:00", "end": "2024-06-01 09:00:00",
         "kind": "GPU", "description": "DBE", "level": "Hardware Failure"},
        {"node": "n2", "start": 1717228800, "kind": "NIC"},
        "not an object",
    ]  # fmt: skip
    text = "\n".join(json.dumps(x) for x in lines) + "\nnot json\n"
    [result] = ingest(eng, "faults", [write(tmp_path, "f.ndjson", text)], ReadOptions())
    assert result.rows == {"node_faults": 2} and result.rejected == 2
    assert rows(eng, "SELECT node, level, end_at IS NULL, source FROM node_faults ORDER BY 1") == [
        ("n1", "Hardware Failure", False, "ndjson"),
        ("n2", None, True, "ndjson"),
    ]


def test_relative_times_without_an_origin_name_the_field(eng: Engine, tmp_path: Path) -> None:
    path = write(tmp_path, "rel.csv", "node,start,end,kind\nn1,3.5,4.0,GPU\n")
    with pytest.raises(UserError, match=r"rel.csv: start: '3.5' cannot be placed.*--trace-start"):
        ingest(eng, "faults", [path])
    assert rows(eng, "SELECT count(*) FROM node_faults") == [(0,)]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    [done] = ingest(eng, "faults", [path], ReadOptions(trace_start=start))
    assert done.rows == {"node_faults": 1}
    placed = datetime(2025, 1, 4, 12, tzinfo=UTC)
    assert rows(eng, "SELECT start_at FROM node_faults") == [(placed,)]


def test_a_trace_with_no_placeable_time_is_an_error_naming_it(eng: Engine, tmp_path: Path) -> None:
    events = [
        {"node_id": "a", "event_time": "soon", "event_type": "fault_start", "fault_type": {}},
        {"node_id": "a", "event_time": None, "event_type": "fault_end", "fault_type": {}},
    ]
    path = write(tmp_path, "trace.json", json.dumps(events, indent=2))
    said = r"line 2: event_time: expected an ISO 8601 time or epoch seconds, got 'soon'"
    with pytest.raises(UserError, match=said):
        ingest(eng, "faults", [path])


def test_trace_end_without_start_is_rejected_and_open_faults_stay_open(
    eng: Engine, tmp_path: Path
) -> None:
    typed = {"Level": "Hardware Failure", "Class": "GPU", "Desc": "GPU Lost"}
    events = [
        {"node_id": "a", "event_time": 1.0, "event_type": "fault_end", "fault_type": typed},
        {"node_id": "a", "event_time": 2.0, "event_type": "fault_start", "fault_type": typed},
    ]
    [result] = ingest(eng, "faults", [write(tmp_path, "t.json", json.dumps(events, indent=1))])
    assert result.rows == {"node_faults": 1}
    assert rows(eng, "SELECT start_at, end_at FROM node_faults") == [
        (datetime(2024, 4, 1, tzinfo=UTC), None)
    ]
    assert [(line, field) for line, field, _ in rejects(eng)] == [(2, "event_time")]


def test_sinfo_list_reasons(eng: Engine) -> None:
    [result] = ingest(eng, "faults", [str(FIXTURES / "sinfo_list_reasons.txt")])
    assert result.rows == {"node_faults": 5} and result.rejected == 1
    assert rows(
        eng, "SELECT node, level, class, description, source, end_at FROM node_faults ORDER BY node"
    )[:3] == [
        ("gpu003", "drain", "slurm", "Not responding", "sinfo:slurm", None),
        ("gpu004", "drain", "slurm", "Not responding", "sinfo:slurm", None),
        ("gpu017", "drain", "slurm", "Kill task failed", "sinfo:root", None),
    ]
    assert [(line, field) for line, field, _ in rejects(eng)] == [(5, "TIMESTAMP")]


def test_scontrol_show_node(eng: Engine) -> None:
    [result] = ingest(eng, "faults", [str(FIXTURES / "scontrol_show_node.txt")])
    assert rows(eng, "SELECT node, level, description, source, start_at FROM node_faults") == [
        ("gpu002", "drain", "GPU 3 XID 79 fallen off the bus", "scontrol:root",
         datetime(2024, 5, 1, 11, 32, 5, tzinfo=UTC)),
        ("gpu009", "down", "Not responding", "scontrol:slurm",
         datetime(2024, 5, 2, 1, 4, 40, tzinfo=UTC)),
        ("gpu010", "drain", "nvidia-smi timeout", "scontrol:bob",
         datetime(2024, 5, 2, 14, 20, tzinfo=UTC)),
    ]  # fmt: skip
    # gpu011: a time that does not read
    assert [(line, field) for line, field, _ in rejects(eng)] == [(43, "Reason")]
    assert result.rejected == 1


def test_a_drain_seen_in_two_captures_is_stored_once(eng: Engine, tmp_path: Path) -> None:
    text = (FIXTURES / "sinfo_list_reasons.txt").read_text()
    ingest(eng, "faults", [str(FIXTURES / "sinfo_list_reasons.txt")])
    later = text + "Disk full           root      2024-05-04T00:00:00 gpu300\n"
    ingest(eng, "faults", [write(tmp_path, "later.txt", later)])
    assert rows(eng, "SELECT count(*), count(DISTINCT (node, start_at)) FROM node_faults") == [
        (6, 6)
    ]
    assert rows(eng, "SELECT count(*) FROM node_signals WHERE kind = 'drain'") == [(6,)]


_fault = st.tuples(
    st.sampled_from(["n1", "n2", "n3"]),
    st.integers(0, 200),
    st.one_of(st.none(), st.integers(0, 100)),
    st.sampled_from(["GPU", "NIC"]),
)


@settings(
    max_examples=examples(0.3),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(faults=st.lists(_fault, min_size=1, max_size=12))
def test_ingest_twice_is_ingest_once(
    warehouses: Warehouses, tmp_path: Path, faults: list[tuple[str, int, int | None, str]]
) -> None:
    lines = ["node,start,end,kind,description"]
    for node, start_h, length_h, kind in faults:
        end = "" if length_h is None else f"{1714521600 + (start_h + length_h) * 3600}"
        lines.append(f"{node},{1714521600 + start_h * 3600},{end},{kind},x")
    path = write(tmp_path, "f.csv", "\n".join(lines) + "\n")
    query = "SELECT node, start_at, end_at, class FROM node_faults ORDER BY ALL"
    with warehouses.engine() as eng:
        ingest(eng, "faults", [path])
        once = rows(eng, query)
        ingest(eng, "faults", [path])
        ingest(eng, "faults", [path], force=True)
        assert rows(eng, query) == once
        # merged: no two stored faults of a node and class overlap
        overlaps = rows(
            eng,
            "SELECT count(*) FROM node_faults a JOIN node_faults b ON a.node = b.node "
            "AND a.class = b.class AND a.start_at < b.start_at "
            "AND (a.end_at IS NULL OR b.start_at <= a.end_at)",
        )
        assert overlaps == [(0,)]
