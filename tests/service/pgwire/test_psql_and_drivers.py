"""psql (a subprocess, as people use it), psycopg2 and SQLAlchemy against the endpoint."""

from __future__ import annotations

import os
import shutil
import subprocess

import psycopg2
import pytest
import sqlalchemy as sa

from tests.service.pgwire.conftest import PASSWORD, Served
from tests.service.pgwire.realpg import RealPostgres

needs_psql = pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")


def psql(served: Served, *commands: str, user: str = "reader") -> subprocess.CompletedProcess[str]:
    args = ["psql", "-X", "-v", "ON_ERROR_STOP=1", served.dsn(user)]
    for command in commands:
        args += ["-c", command]
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)


@needs_psql
def test_psql_describe_commands(served: Served) -> None:
    done = psql(served, r"\dt", r"\dn", r"\l", r"\d nodes", r"\d+ jobs", r"\dv", r"\df", r"\di")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "public | nodes" in out and "public | pg_types_probe" in out
    assert 'Table "public.nodes"' in out and '"nodes_pkey" PRIMARY KEY, btree (host)' in out
    assert "timestamp with time zone" in out and "text[]" in out
    assert "wanka | wanka | UTF8" in out  # \l
    # \df: the model functions, with their parameters
    assert "public | gpu_mtbf_h " in out and 'failures "any", gpus "any", hours "any"' in out


@needs_psql
def test_psql_describes_what_wanka_shows_as_tables_like_postgresql(served: Served) -> None:
    """gpu_metrics (a view shown as a table) has no rules psql would ask pg_get_ruledef for, an
    access method; fixed-width columns are stored plain, text extended; roles inherit."""
    done = psql(served, r"\d gpu_metrics", r"\d+ gpu_metrics", r"\dt+ gpu_metrics", r"\du")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert 'Table "public.gpu_metrics"' in out
    assert "public | gpu_metrics | table | wanka | permanent   | heap" in out
    rows = {line.split("|")[0].strip(): line for line in out.splitlines() if "|" in line}
    assert "| plain " in rows["ts"] and "| extended " in rows["host"]
    assert "No inheritance" not in out and "Superuser" in out


@needs_psql
def test_psql_query_errors_and_copy(served: Served) -> None:
    done = psql(served, "select i, t from pg_types_probe order by i limit 2")
    assert done.returncode == 0 and "gpu001" in done.stdout and "(2 rows)" in done.stdout
    refused = psql(served, "delete from nodes")
    assert refused.returncode != 0 and "reader" in refused.stderr
    copied = psql(served, r"\copy (select i, t from pg_types_probe order by i) to stdout csv")
    assert copied.stdout.splitlines() == ["1,gpu001", "2,it's", ","]


def test_psycopg2_client_side_parameters_and_named_cursor(served: Served) -> None:
    with psycopg2.connect(served.dsn("writer")) as conn:
        cur = conn.cursor()
        cur.execute(
            "select t, n from pg_types_probe where i = %s or t = %s order by i", (1, "it's")
        )
        assert [(t, str(n)) for t, n in cur.fetchall()] == [
            ("gpu001", "12345.678"),
            ("it's", "-0.500"),
        ]
        named = conn.cursor("scroll")
        named.itersize = 100
        named.execute("select range from range(1000)")
        assert sum(1 for _ in named) == 1000
        named.close()
        cur.execute(
            "select %s::timestamptz, %s::date, %s::float8",
            ("2024-01-01 00:00:00+00", "2024-01-02", 0.5),
        )
        stamp, day, half = cur.fetchone()
        assert stamp.isoformat() == "2024-01-01T00:00:00+00:00" and str(day) == "2024-01-02"
        assert half == 0.5


def test_psycopg2_rowcount_of_writes(served: Served) -> None:
    with psycopg2.connect(served.dsn("admin")) as conn:
        cur = conn.cursor()
        cur.execute("create table if not exists written (n int)")
        cur.execute("insert into written select range from range(5)")
        assert cur.rowcount == 5
        cur.execute("update written set n = n + 1 where n < 2")
        assert cur.rowcount == 2
        cur.execute("delete from written")
        assert cur.rowcount == 5
        cur.execute("drop table written")


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_sqlalchemy_reflection_and_queries(served: Served, driver: str) -> None:
    engine = sa.create_engine(served.url(driver, user="reader"))
    try:
        inspector = sa.inspect(engine)
        assert {"public", "wanka"} <= set(inspector.get_schema_names())
        assert {"jobs", "nodes", "gpu_metrics"} <= set(inspector.get_table_names())
        columns = {c["name"]: c for c in inspector.get_columns("nodes")}
        assert columns["host"]["nullable"] is False and str(columns["gpus"]["type"]) == "INTEGER"
        assert inspector.get_pk_constraint("nodes")["constrained_columns"] == ["host"]
        jobs = sa.Table("jobs", sa.MetaData(), autoload_with=engine)
        assert isinstance(jobs.c.node_list.type, sa.ARRAY)
        probe = sa.Table("pg_types_probe", sa.MetaData(), autoload_with=engine)
        with engine.connect() as conn:
            query = sa.select(probe.c.t).where(probe.c.i == sa.bindparam("i")).order_by(probe.c.t)
            assert conn.execute(query, {"i": 1}).scalars().all() == ["gpu001"]
            total = conn.execute(sa.select(sa.func.count()).select_from(probe)).scalar()
            assert total == 3
    finally:
        engine.dispose()


def test_password_is_required_even_for_loopback(served: Served) -> None:
    with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
        psycopg2.connect(served.dsn("admin", password=PASSWORD + "x"))


@needs_psql
def test_no_catalog_shows_the_tables_no_sql_may_read(served: Served) -> None:
    """wanka.users and wanka.tokens (salts, SCRAM keys, token digests) are refused to every
    role's SQL, so no catalog lists them or their columns."""
    done = psql(
        served,
        "select count(*) from information_schema.columns where table_name in ('users', 'tokens')",
        "select count(*) from information_schema.tables where table_name in ('users', 'tokens')",
        "select count(*) from pg_attribute a join pg_class c on c.oid = a.attrelid "
        "where c.relname in ('users', 'tokens')",
        r"\dt wanka.*",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("     0\n") == 3 and "wanka.users" not in done.stdout
    assert "| users " not in done.stdout and "| tokens " not in done.stdout
    assert "wanka  | settings" in done.stdout  # the rest of the wanka schema is still listed


def test_information_schema_and_pg_catalog_are_browsable_as_in_postgresql(
    served: Served, real_postgres: RealPostgres
) -> None:
    """Superset's and DBeaver's schema browsers list and describe the catalogs' own relations."""
    ours = sa.create_engine(served.url("psycopg", user="reader"))
    theirs = sa.create_engine(
        f"postgresql+psycopg://postgres@127.0.0.1:{real_postgres.port}/postgres"
    )
    with ours.connect() as conn:
        inspector = sa.inspect(conn)
        views = set(inspector.get_view_names(schema="information_schema"))
        assert {"tables", "columns", "schemata", "views"} <= views
        catalogs = set(inspector.get_table_names(schema="pg_catalog"))
        assert {"pg_class", "pg_namespace", "pg_attribute", "pg_type"} <= catalogs
        columns = {c["name"] for c in inspector.get_columns("tables", schema="information_schema")}
    with theirs.connect() as conn:
        real = {
            c["name"] for c in sa.inspect(conn).get_columns("tables", schema="information_schema")
        }
        real_views = set(sa.inspect(conn).get_view_names(schema="information_schema"))
    assert columns == real  # the same columns as PostgreSQL's view
    assert views <= real_views  # a part of PostgreSQL's 65 views, none it lacks
