"""Every catalog query of the corpus (psql, SQLAlchemy, pgjdbc/DBeaver/Metabase, Grafana,
Superset) runs as a reader, and the answers that matter are right."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.service.pgwire.conftest import Served
from tests.service.pgwire.corpus import Case, cases

CASES = cases()


@pytest.fixture(scope="module")
def reader(served: Served) -> Iterator[psycopg.Connection]:
    with psycopg.connect(served.dsn("reader"), autocommit=True) as connection:
        yield connection


def run(conn: psycopg.Connection, sql: str) -> list[tuple[Any, ...]]:
    found = conn.execute("select 'jobs'::regclass::oid").fetchone()
    assert found is not None
    oid = found[0]
    cur = conn.execute(sql.replace("{jobs_oid}", str(oid)))
    return cur.fetchall() if cur.description else []


def test_corpus_covers_every_client() -> None:
    assert {c.file for c in CASES} == {"grafana", "pgjdbc", "psql", "sqlalchemy", "superset"}
    assert len(CASES) >= 100


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_query_runs(reader: psycopg.Connection, case: Case) -> None:
    run(reader, case.sql)


def _case(name: str) -> str:
    return next(c.sql for c in CASES if c.name == name)


def test_answers_clients_rely_on(reader: psycopg.Connection) -> None:
    assert run(reader, _case("getPrimaryKeys")) == [
        (None, "public", "nodes", "host", 1, "nodes_pkey")
    ]
    assert run(reader, _case("version")) and int(run(reader, _case("version"))[0][0]) == 1500
    schemas = [r[0] for r in run(reader, _case("getSchemas"))]
    assert "public" in schemas and "main" not in schemas
    tables = {r[2] for r in run(reader, _case("getTables"))}
    assert {"jobs", "nodes", "gpu_metrics"} <= tables
    columns = run(reader, _case("columns of a table"))
    assert ("job_id", "text") in columns and ("start_at", "timestamp with time zone") in columns
    assert run(reader, _case("quoting helpers")) == [
        ('"Gpu Metrics"', "jobs", ["public", "Jobs"], 3, 1)
    ]
    assert run(reader, _case("TypeInfoCache by oid")) == [(True, "pg_catalog", "timestamptz")]
    assert run(reader, _case("DBeaver database by name"))[0][2] == "wanka"  # oid, then db.*
