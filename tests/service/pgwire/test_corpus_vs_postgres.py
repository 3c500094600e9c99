"""The client corpus on a real PostgreSQL 15 and on wanka: the same shape of answer.

Every catalog query psql, pgjdbc/DBeaver, Grafana, SQLAlchemy and Superset send runs on both
servers (wanka as a reader); the results must have the same columns, by name and by type OID.
Rows differ (the two hold different tables), so values are compared only where an answer is
about things both have: a schema, a type, the database. Known differences are listed with
their reason and asserted to still differ, so the list cannot go stale.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from service.pgwire.compat.objects import views
from tests.service.pgwire.conftest import Served, side_by_side
from tests.service.pgwire.corpus import Case, cases
from tests.service.pgwire.realpg import RealPostgres

CASES = cases()

#: wanka's tables the corpus looks at, as PostgreSQL tables of the same column types
TABLES = """
create table if not exists jobs (job_id text primary key, job_name text, start_at timestamptz,
    end_at timestamptz, gpus int, elapsed_s float8);
create table if not exists nodes (host text primary key, cluster text, gpus int, memory_gb float8);
create table if not exists gpu_metrics (ts timestamptz, host text, gpu int, metric text,
    value float8);
"""

Shape = list[tuple[str, int]]

_EPOCH = "extract() is numeric since PostgreSQL 14, double in DuckDB"
_SERIES = "generate_series(int, int) is int4 in PostgreSQL, bigint in DuckDB"
_XID = "xid (28): wanka has no transaction ids, the column is an int4 0"
_ACL = "aclitem[] (1034): wanka has no ACLs, the column is a NULL text[]"
_REGCLASS = (
    "regclass (2205): ::regclass is a name lookup on wanka, text (25); the wire cannot label it "
    "regclass, whose binary form is the oid"
)
_NAMES = "name[] (1003): only whole string columns are labelled name, arrays stay text[]"
_INT2VECTOR = "int2vector (22): DuckDB's SMALLINT[] goes out as int2[] (1005)"

#: (corpus case id, column) -> why wanka's column differs from PostgreSQL's; None: the whole case
KNOWN: dict[tuple[str, int | None], str] = {
    ("grafana:time series panel ($__timeGroupAlias, $__timeFilter expanded)", 0): _EPOCH,
    ("grafana:table panel with epoch conversion", 0): _EPOCH,
    ("pgjdbc:getImportedKeys", 8): _SERIES,
    ("pgjdbc:DBeaver database by name", 9): _XID,
    ("pgjdbc:DBeaver database by name", 10): _XID,
    ("pgjdbc:DBeaver database by name", 16): _ACL,
    ("pgjdbc:DBeaver schemas with descriptions", 4): _ACL,
    ("pgjdbc:DBeaver tables of a schema", 29): _XID,
    ("pgjdbc:DBeaver tables of a schema", 30): _XID,
    ("pgjdbc:DBeaver tables of a schema", 31): _ACL,
    ("pgjdbc:DBeaver tables of a schema", 33): "pg_node_tree (194): no partitions, a NULL text",
    ("psql:psql 12", 1): _REGCLASS,
    ("psql:psql 14", 0): _REGCLASS,
    ("psql:psql 15", 0): _REGCLASS,
    ("psql:psql 20", 8): _NAMES,
    ("sqlalchemy:sqlalchemy 18", 5): _INT2VECTOR,
    ("sqlalchemy:sqlalchemy 27", 5): _INT2VECTOR,
    ("sqlalchemy:sqlalchemy 36", 5): _INT2VECTOR,
    ("sqlalchemy:sqlalchemy 40", 6): _NAMES,
    ("superset:hstore probe", 0): "regtype (2206): to_regtype() answers the oid as int4",
}


@pytest.fixture(scope="module")
def both(served: Served, real_postgres: RealPostgres) -> Iterator[tuple[psycopg.Connection, ...]]:
    with side_by_side(served, real_postgres, pg_setup=[TABLES]) as pair:
        yield pair


def _sql(conn: psycopg.Connection, case: Case) -> str:
    found = conn.execute("select 'jobs'::regclass::oid").fetchone()
    assert found is not None
    return case.sql.replace("{jobs_oid}", str(found[0]))


def _shape(conn: psycopg.Connection, case: Case) -> Shape:
    """Each result column's name and type OID."""
    with conn.cursor() as cur:
        cur.execute(_sql(conn, case))
        result = cur.pgresult
        assert result is not None
        return [((result.fname(c) or b"").decode(), result.ftype(c)) for c in range(result.nfields)]


def _rows(conn: psycopg.Connection, sql: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql).fetchall()


def _differences(expected: Shape, found: Shape) -> dict[int | None, str]:
    if len(expected) != len(found):
        return {None: f"PostgreSQL {expected}, wanka {found}"}
    return {
        column: f"PostgreSQL {want}, wanka {got}"
        for column, (want, got) in enumerate(zip(expected, found, strict=True))
        if want != got
    }


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_same_shape_as_postgresql(
    both: tuple[psycopg.Connection, psycopg.Connection], case: Case
) -> None:
    pg, wanka = both
    differences = _differences(_shape(pg, case), _shape(wanka, case))
    unexplained = {
        column: why for column, why in differences.items() if (case.id, column) not in KNOWN
    }
    assert not unexplained, f"{case.id}: " + "; ".join(
        f"column {c}: {why}" for c, why in unexplained.items()
    )


def test_known_differences_still_differ(
    both: tuple[psycopg.Connection, psycopg.Connection],
) -> None:
    """When a known difference disappears, KNOWN must shrink (no stale excuses)."""
    pg, wanka = both
    by_id = {c.id: c for c in CASES}
    stale = [
        (case_id, column)
        for case_id, column in KNOWN
        if column not in _differences(_shape(pg, by_id[case_id]), _shape(wanka, by_id[case_id]))
    ]
    assert not stale, f"no longer different, drop from KNOWN: {stale}"


#: questions whose answer is about what both servers have: the same rows on both
SAME_ANSWER = [
    "select oid, typname, typlen from pg_catalog.pg_type where typname in "
    "('int4', 'int8', 'text', 'bool', 'timestamptz', 'float8', 'numeric', 'varchar') order by 1",
    "select 'int4'::regtype::oid, 'text'::regtype::oid, 'timestamptz'::regtype::oid",
    "select nspname from pg_catalog.pg_namespace where nspname = 'public'",
    "select pg_catalog.format_type(23, -1), pg_catalog.format_type(1184, -1), "
    "pg_catalog.format_type(1700, 655366)",
    "select current_setting('server_version_num')::int / 10000",
    "select attname, pg_catalog.format_type(atttypid, atttypmod), attnotnull "
    "from pg_catalog.pg_attribute where attrelid = 'nodes'::regclass and attname = 'host'",
    "select relname, relkind from pg_catalog.pg_class where relname = 'jobs'",
    "select conname, contype from pg_catalog.pg_constraint where conname = 'nodes_pkey'",
]


@pytest.mark.parametrize("sql", SAME_ANSWER)
def test_same_answer_as_postgresql(
    both: tuple[psycopg.Connection, psycopg.Connection], sql: str
) -> None:
    pg, wanka = both
    assert _rows(wanka, sql) == _rows(pg, sql)


def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def test_psql_lists_what_both_have(both: tuple[psycopg.Connection, psycopg.Connection]) -> None:
    """`\\dn` lists public on both, `\\l` the database, `\\dt` jobs and nodes."""
    pg, wanka = both
    for conn in (pg, wanka):
        assert ("public",) in [r[:1] for r in _rows(conn, _sql(conn, _case("psql 2")))]
        assert {"jobs", "nodes"} <= {r[1] for r in _rows(conn, _sql(conn, _case("psql 3")))}
    databases = [r[0] for r in _rows(wanka, _sql(wanka, _case("psql 1")))]
    assert "wanka" in databases and "postgres" in [r[0] for r in _rows(pg, _case("psql 1").sql)]


def test_current_timestamp_named_as_postgresql(
    both: tuple[psycopg.Connection, psycopg.Connection],
) -> None:
    """DuckDB binds `CURRENT_TIMESTAMP AS "current_timestamp"` to the alias: an error once."""
    pg, wanka = both
    sql = 'select current_timestamp, current_timestamp as "current_timestamp"'
    case = Case("extra", "now", sql)
    assert _shape(wanka, case) == _shape(pg, case) == [("current_timestamp", 1184)] * 2


#: PostgreSQL types of catalog columns wanka gives another type, with the reason
KNOWN_CATALOG_TYPES = {
    1034: "aclitem[]: wanka has no ACLs, a NULL text[]",
    28: "xid: wanka has no transaction ids, an int4 0",
    194: "pg_node_tree: expressions are DuckDB's SQL text",
    22: "int2vector: DuckDB's SMALLINT[] is int2[]",
    30: "oidvector: a list of oids is oid[] or int8[]",
    24: "regproc: function names are text",
    1002: '"char"[]: only whole string columns are labelled "char"',
    2277: "anyarray: NULL text",
}
#: columns wanka's catalog relations have that PostgreSQL 15's do not
KNOWN_CATALOG_EXTRA = {("pg_proc", "proisagg"): "gone in PostgreSQL 11; older clients ask for it"}


def _catalog_columns(conn: psycopg.Connection, relation: str) -> list[tuple[str, int]]:
    with conn.cursor() as cur:
        cur.execute(f"select * from {relation} limit 0")
        assert cur.description is not None
        return [(d.name, d.type_code) for d in cur.description]


def _relations() -> list[str]:
    return [k if "." in k else f"pg_catalog.{k}" for k in views() if k != "pg_get_keywords"]


@pytest.mark.parametrize("relation", _relations())
def test_catalog_relation_columns_as_postgresql(
    both: tuple[psycopg.Connection, psycopg.Connection], relation: str
) -> None:
    """`select *` of a catalog relation: PostgreSQL's columns (wanka may leave some out), in
    PostgreSQL's order, of PostgreSQL's types but for the known ones."""
    pg, wanka = both
    expected = dict(_catalog_columns(pg, relation))
    found = _catalog_columns(wanka, relation)
    name = relation.removeprefix("pg_catalog.")
    assert [c for c, _ in found if c not in expected and (name, c) not in KNOWN_CATALOG_EXTRA] == []
    kept = [c for c in expected if c in dict(found)]
    assert [c for c, _ in found if c in expected] == kept, "not in PostgreSQL's order"
    wrong = {c: (expected[c], oid) for c, oid in found if c in expected and expected[c] != oid}
    assert {c: t for c, t in wrong.items() if t[0] not in KNOWN_CATALOG_TYPES} == {}


def test_known_catalog_types_still_differ(
    both: tuple[psycopg.Connection, psycopg.Connection],
) -> None:
    """Each known type difference still occurs somewhere, each known extra column still is."""
    pg, wanka = both
    seen: set[int] = set()
    for relation in _relations():
        expected = dict(_catalog_columns(pg, relation))
        found = _catalog_columns(wanka, relation)
        seen |= {expected[c] for c, oid in found if expected.get(c, oid) != oid}
    assert set(KNOWN_CATALOG_TYPES) - seen == set(), "no longer different: drop them"
    for name, column in KNOWN_CATALOG_EXTRA:
        assert column in dict(_catalog_columns(wanka, f"pg_catalog.{name}"))
