"""EXPLAIN over the wire as PostgreSQL 15 answers it (issue 21 point 2).

Superset's "Estimate cost" runs `EXPLAIN <sql>` and reads the first row's `cost=S..T`; DBeaver,
pgAdmin and Metabase parse `EXPLAIN (FORMAT JSON)`. DuckDB's own plan stays one option away, and
EXPLAIN is refused wherever running the statement is.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from service.pgwire import codec
from service.pgwire.compat import plan, plan_format
from tests.service.pgwire.conftest import Served, side_by_side
from tests.service.pgwire.realpg import RealPostgres
from tests.service.pgwire.test_protocol import SYNC, Client, describe, kinds, parse

#: the regex of apache/superset superset/db_engine_specs/postgres.py,
#: PostgresEngineSpec.estimate_statement_cost
SUPERSET_COST = re.compile(r"cost=([\d\.]+)\.\.([\d\.]+)")
JOIN_GROUP = (
    "select p.t, count(*) from pg_types_probe p join pg_types_probe q on p.i = q.i "
    "where p.f > -1 group by p.t"
)


def superset_estimate(cursor: psycopg.Cursor[Any], statement: str) -> dict[str, float]:
    """What Superset's PostgresEngineSpec.estimate_statement_cost does with a cursor."""
    cursor.execute(f"EXPLAIN {statement}")
    row = cursor.fetchone()
    assert row is not None
    match = SUPERSET_COST.search(row[0])
    if match:
        return {"Start-up cost": float(match.group(1)), "Total cost": float(match.group(2))}
    return {}


@pytest.fixture(scope="module")
def conn(served: Served) -> Iterator[psycopg.Connection]:
    with psycopg.connect(served.dsn("admin"), autocommit=True) as connection:
        yield connection


@pytest.fixture(scope="module")
def reader(served: Served) -> Iterator[psycopg.Connection]:
    with psycopg.connect(served.dsn("reader"), autocommit=True) as connection:
        yield connection


def _columns(cur: psycopg.Cursor[Any]) -> list[tuple[str, int]]:
    assert cur.description is not None
    return [(d.name, d.type_code) for d in cur.description]


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def test_text_plan_is_one_query_plan_column_superset_can_read(conn: psycopg.Connection) -> None:
    cur = conn.execute(f"EXPLAIN {JOIN_GROUP}")
    assert _columns(cur) == [("QUERY PLAN", 25)]
    assert cur.statusmessage == "EXPLAIN"
    lines = [row[0] for row in cur.fetchall()]
    assert SUPERSET_COST.search(lines[0])
    assert lines[0].startswith("HashAggregate  (cost=")
    assert any(line.strip().startswith("->  Seq Scan on pg_types_probe  (cost=") for line in lines)
    assert any(line.strip().startswith("Filter: (") for line in lines)
    assert all(re.fullmatch(r" *->  \S.*| +\S.*", line) for line in lines[1:])
    with conn.cursor() as cursor:
        cost = superset_estimate(cursor, JOIN_GROUP)
    assert 0 <= cost["Start-up cost"] <= cost["Total cost"]


def test_costs_grow_with_the_work(conn: psycopg.Connection) -> None:
    with conn.cursor() as cursor:
        small = superset_estimate(cursor, "select * from generate_series(1, 10)")
        big = superset_estimate(cursor, "select * from generate_series(1, 1000000)")
        sorted_big = superset_estimate(
            cursor, "select * from generate_series(1, 1000000) order by 1 desc"
        )
    assert small["Total cost"] < big["Total cost"] < sorted_big["Total cost"]


def test_json_plan_nests_join_and_aggregate(conn: psycopg.Connection) -> None:
    cur = conn.execute(f"EXPLAIN (FORMAT JSON) {JOIN_GROUP}")
    assert _columns(cur) == [("QUERY PLAN", 114)]
    assert cur.pgresult is not None
    value = cur.pgresult.get_value(0, 0)
    assert value is not None and cur.rowcount == 1
    raw = bytes(value).decode()
    document = json.loads(raw)
    top = document[0]["Plan"]
    assert list(top)[:3] == ["Node Type", "Strategy", "Partial Mode"]
    assert (top["Node Type"], top["Strategy"]) == ("Aggregate", "Hashed")
    for node in _nodes(top):
        assert {"Startup Cost", "Total Cost", "Plan Rows", "Plan Width"} <= set(node)
        assert node["Startup Cost"] <= node["Total Cost"]
    join = top["Plans"][0]
    assert (join["Node Type"], join["Join Type"], join["Parent Relationship"]) == (
        "Hash Join",
        "Inner",
        "Outer",
    )
    outer, inner = join["Plans"]
    assert (outer["Node Type"], outer["Relation Name"]) == ("Seq Scan", "pg_types_probe")
    assert (inner["Node Type"], inner["Parent Relationship"]) == ("Hash", "Inner")
    assert inner["Plans"][0]["Node Type"] == "Seq Scan"
    assert '"Total Cost": ' in raw and raw.startswith('[\n  {\n    "Plan": {')


def test_costs_off(conn: psycopg.Connection) -> None:
    lines = [r[0] for r in conn.execute(f"EXPLAIN (COSTS OFF) {JOIN_GROUP}").fetchall()]
    assert lines[0] == "HashAggregate" and not any("cost=" in line for line in lines)
    document = conn.execute(f"EXPLAIN (COSTS false, FORMAT JSON) {JOIN_GROUP}").fetchone()
    assert document is not None
    assert all("Total Cost" not in node for node in _nodes(document[0][0]["Plan"]))


def test_verbose_names_schema_and_output(conn: psycopg.Connection) -> None:
    lines = [r[0] for r in conn.execute(f"EXPLAIN VERBOSE {JOIN_GROUP}").fetchall()]
    assert any("Seq Scan on main.pg_types_probe" in line for line in lines)
    assert any(line.strip().startswith("Output: ") for line in lines)


def test_analyze_gives_actual_rows_and_execution_time(conn: psycopg.Connection) -> None:
    lines = [r[0] for r in conn.execute(f"EXPLAIN ANALYZE {JOIN_GROUP}").fetchall()]
    assert re.search(r"\(actual time=[\d.]+\.\.[\d.]+ rows=\d+ loops=1\)$", lines[0])
    assert re.fullmatch(r"Execution Time: [\d.]+ ms", lines[-1])
    row = conn.execute(
        "EXPLAIN (ANALYZE, FORMAT JSON) select count(*) from pg_types_probe where i > 1"
    ).fetchone()
    assert row is not None
    document = row[0][0]
    assert document["Execution Time"] >= 0 and document["Triggers"] == []
    scan = list(_nodes(document["Plan"]))[-1]
    assert (scan["Actual Rows"], scan["Rows Removed by Filter"]) == (1, 2)


def test_analyze_without_duckdb_profile_still_answers(conn: psycopg.Connection) -> None:
    """DuckDB 2.0 profiles a count(*) answered from statistics as {"result": "error"}."""
    lines = [r[0] for r in conn.execute("EXPLAIN ANALYZE select count(*) from pg_types_probe")]
    assert SUPERSET_COST.search(lines[0])
    assert re.fullmatch(r"Execution Time: [\d.]+ ms", lines[-1])
    row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) select count(*) from pg_types_probe")
    document = row.fetchall()[0][0][0]
    assert document["Plan"]["Plan Rows"] == 1 and document["Execution Time"] >= 0


def test_parameters_are_bound_into_the_explained_statement(conn: psycopg.Connection) -> None:
    rows = conn.execute("EXPLAIN select * from pg_types_probe where i = %s", [1]).fetchall()
    assert any("Filter: (i = 1)" in r[0] for r in rows)


def test_explained_statement_gets_the_compatibility_rewrite(reader: psycopg.Connection) -> None:
    """OPERATOR(pg_catalog.~) is psql's regex match, which DuckDB's parser does not read."""
    sql = "select t from pg_types_probe where t OPERATOR(pg_catalog.~) '^gpu'"
    assert reader.execute(sql).fetchall() == [("gpu001",)]
    lines = [r[0] for r in reader.execute(f"EXPLAIN {sql}").fetchall()]
    assert SUPERSET_COST.search(lines[0])


def test_duckdb_plan_on_request(conn: psycopg.Connection) -> None:
    cur = conn.execute(f"EXPLAIN (FORMAT DUCKDB) {JOIN_GROUP}")
    assert _columns(cur) == [("explain_key", 25), ("explain_value", 25)]
    key, value = cur.fetchall()[0]
    assert key == "physical_plan" and "Seq Scan" in value and "pg_types_probe" in value
    conn.execute("SET wanka.explain_format = 'duckdb'")
    try:
        assert conn.execute("EXPLAIN select 1").fetchall()[0][0] == "physical_plan"
        assert _columns(conn.execute("EXPLAIN (FORMAT TEXT) select 1")) == [("QUERY PLAN", 25)]
    finally:
        conn.execute("RESET wanka.explain_format")
    assert _columns(conn.execute("EXPLAIN select 1")) == [("QUERY PLAN", 25)]


def test_simple_query_protocol_and_a_prepared_explain(
    conn: psycopg.Connection,
) -> None:
    """Superset's psycopg2 sends EXPLAIN as a simple query; a prepared EXPLAIN binds $1."""
    simple = conn.pgconn.exec_(f"EXPLAIN {JOIN_GROUP}; EXPLAIN (FORMAT JSON) select 1".encode())
    assert simple.status == psycopg.pq.ExecStatus.TUPLES_OK
    assert (simple.fname(0), simple.ftype(0), simple.ntuples) == (b"QUERY PLAN", 114, 1)
    assert conn.pgconn.prepare(b"explain_json", b"EXPLAIN (FORMAT JSON) select $1::int").status
    ran = conn.pgconn.exec_prepared(b"explain_json", [b"7"])
    assert (ran.fname(0), ran.ftype(0), ran.ntuples) == (b"QUERY PLAN", 114, 1)
    assert json.loads(bytes(ran.get_value(0, 0) or b""))[0]["Plan"]["Node Type"] == "Result"
    with pytest.raises(psycopg.errors.SyntaxError):
        conn.execute("DECLARE c CURSOR FOR EXPLAIN select 1")


def test_unknown_format_and_option_are_errors(conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        conn.execute("EXPLAIN (FORMAT XML) select 1")
    with pytest.raises(psycopg.errors.SyntaxError):
        conn.execute("EXPLAIN (COLOUR on) select 1")


@pytest.mark.parametrize(
    "statement",
    [
        "delete from pg_types_probe",
        "insert into pg_types_probe (i) values (4)",
        "select * from wanka.users",
        "select name from wanka.tokens",
    ],
)
@pytest.mark.parametrize("option", ["", "(FORMAT JSON) ", "ANALYZE ", "(FORMAT DUCKDB) "])
def test_reader_explain_is_refused_like_running_it(
    reader: psycopg.Connection, statement: str, option: str
) -> None:
    with pytest.raises(psycopg.Error) as running:
        reader.execute(statement)
    with pytest.raises(psycopg.Error) as explaining:
        reader.execute(f"EXPLAIN {option}{statement}")
    assert type(explaining.value) is type(running.value)
    assert explaining.value.sqlstate == running.value.sqlstate
    assert reader.execute("select count(*) from pg_types_probe").fetchone() == (3,)


# -- beside a real PostgreSQL 15 ---------------------------------------------------------------

PG_PROBE = "create temp table pg_types_probe (i int4, f float8, t text)"


@pytest.fixture(scope="module")
def both(served: Served, real_postgres: RealPostgres) -> Iterator[tuple[psycopg.Connection, ...]]:
    setup = [
        PG_PROBE,
        "insert into pg_types_probe values (1, 1.5, 'a'), (2, -0.1, 'b'), (null, null, null)",
        "analyze pg_types_probe",
        "set enable_mergejoin = off; set enable_nestloop = off; set enable_sort = off",
    ]
    with side_by_side(served, real_postgres, pg_setup=setup) as pair:
        yield pair


@pytest.mark.parametrize("prefix", ["EXPLAIN ", "EXPLAIN (COSTS OFF) ", "EXPLAIN ANALYZE "])
def test_text_shape_matches_postgresql(
    both: tuple[psycopg.Connection, psycopg.Connection], prefix: str
) -> None:
    answers = []
    for conn in both:
        cur = conn.execute(prefix + JOIN_GROUP)
        lines = [r[0] for r in cur.fetchall()]
        answers.append((_columns(cur), cur.statusmessage, lines))
    (pg_columns, pg_tag, pg_lines), (columns, tag, lines) = answers
    assert (columns, tag) == (pg_columns, pg_tag)
    assert bool(SUPERSET_COST.search(lines[0])) == bool(SUPERSET_COST.search(pg_lines[0]))
    assert _node_lines(lines) == _node_lines(pg_lines)
    if prefix == "EXPLAIN ANALYZE ":
        assert lines[-2].startswith("Planning Time: ") == pg_lines[-2].startswith("Planning Time: ")
        assert lines[-1].split(":")[0] == pg_lines[-1].split(":")[0] == "Execution Time"


def _node_lines(lines: list[str]) -> list[tuple[int, str]]:
    """(indent, node) per plan node line: "  ->  Seq Scan on t q  (cost=..." is (2, "Seq Scan")."""
    nodes = []
    for number, line in enumerate(lines):
        match = re.match(r"^( *)(?:->  )?([A-Z][A-Za-z ]*?)(?: on \S+(?: \S+)?)?(?:  \(|$)", line)
        if match and (number == 0 or "->  " in line):
            nodes.append((len(match[1]), match[2]))
    return nodes


@pytest.mark.parametrize(
    "options",
    ["FORMAT JSON", "FORMAT JSON, COSTS OFF", "ANALYZE, FORMAT JSON", "VERBOSE, FORMAT JSON"],
)
def test_json_keys_match_postgresql_per_node_type(
    both: tuple[psycopg.Connection, psycopg.Connection], options: str
) -> None:
    documents = []
    for conn in both:
        cur = conn.execute(f"EXPLAIN ({options}) {JOIN_GROUP}")
        assert cur.rowcount == 1
        documents.append((_columns(cur), cur.fetchall()[0][0]))
    (pg_columns, pg_document), (columns, document) = documents
    assert columns == pg_columns == [("QUERY PLAN", 114)]
    assert set(document[0]) == set(pg_document[0])

    def keys(root: dict[str, Any]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for node in _nodes(root):
            found.setdefault(node["Node Type"], set()).update(node)
        return found

    ours, theirs = keys(document[0]["Plan"]), keys(pg_document[0]["Plan"])
    assert {"Aggregate", "Hash Join", "Hash", "Seq Scan"} <= set(ours) & set(theirs)
    #: what PostgreSQL measures that DuckDB does not (memory of hashes and sorts)
    unmeasured = {
        "Hash Buckets",
        "Original Hash Buckets",
        "Hash Batches",
        "Original Hash Batches",
        "Peak Memory Usage",
        "HashAgg Batches",
        "Disk Usage",
    }
    for node_type in set(ours) & set(theirs):
        assert ours[node_type] == theirs[node_type] - unmeasured, node_type


# -- the translation alone ---------------------------------------------------------------------

DUCKDB_TOP_N = [
    {
        "name": "TOP_N",
        "extra_info": {"Top": "3", "Order By": "count_star() DESC", "Estimated Cardinality": "3"},
        "children": [
            {
                "name": "PROJECTION",
                "extra_info": {"Projections": ["#0", "#1"], "Estimated Cardinality": "20"},
                "children": [
                    {
                        "name": "HASH_GROUP_BY",
                        "extra_info": {
                            "Groups": "#0",
                            "Aggregates": "count_star()",
                            "Estimated Cardinality": "20",
                        },
                        "children": [
                            {
                                "name": "FILTER",
                                "extra_info": {
                                    "Expression": "(n <= 499)",
                                    "Estimated Cardinality": "100",
                                },
                                "children": [
                                    {
                                        "name": "SEQ_SCAN",
                                        "extra_info": {
                                            "Table": "memory.main.t",
                                            "Projections": ["s", "n"],
                                            "Filters": "n > 1",
                                            "Estimated Cardinality": "2000",
                                        },
                                        "children": [],
                                    }
                                ],
                            }
                        ],
                    }
                ],
            }
        ],
    }
]


def test_translation_of_a_top_n_over_a_group_by() -> None:
    tables = {"memory.main.t": plan.Table({"s": 32, "n": 4}, 10000)}
    root = plan.translate(DUCKDB_TOP_N, tables, result_width=40)
    lines = plan_format.text_lines(root, plan_format.Style())
    assert [line.split("  (")[0] for line in lines] == [
        "Limit",
        "  ->  Sort",
        "        Sort Key: count_star() DESC",
        "        ->  HashAggregate",
        "              Group Key: s",
        "              ->  Seq Scan on t",
        "                    Filter: ((n > 1) AND (n <= 499))",
    ]
    assert "rows=3 width=40" in lines[0] and "rows=100 width=36" in lines[5]
    # 10000 rows of 36 bytes = 44 pages, 10000 * (0.01 + 0.0025), + 2000 * 0.0025 for the filter
    assert "(cost=0.00..174.00 rows=100" in lines[5]


def test_describe_of_a_prepared_explain_names_its_column_and_type(port: int) -> None:
    """pgjdbc (DBeaver, Metabase) describes a statement before running it."""
    client = Client(port)
    for options, oid in (("FORMAT JSON", 114), ("FORMAT TEXT", 25)):
        sql = f"EXPLAIN ({options}) select $1::int"
        client.send(parse("e", sql, (23,)), describe(b"S", "e"), close_statement("e"), SYNC)
        got = client.until(b"Z")
        assert kinds(got) == b"1tT3Z"
        fields = got[2][1]
        name_end = fields.index(b"\0", 2)
        assert fields[2:name_end] == b"QUERY PLAN"
        assert struct.unpack("!i", fields[name_end + 7 : name_end + 11])[0] == oid


def close_statement(name: str) -> bytes:
    return codec.message(b"C", b"S" + codec.cstr(name))
