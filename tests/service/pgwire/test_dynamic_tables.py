"""Dynamic-table statements over the PostgreSQL protocol: the same path as the CLI and HTTP."""

from __future__ import annotations

import psycopg
import pytest

from tests.service.pgwire.conftest import Served


def test_an_admin_manages_a_dynamic_table_from_psycopg(served: Served) -> None:
    with psycopg.connect(served.dsn("admin"), autocommit=True) as conn:
        conn.execute("DROP DYNAMIC TABLE IF EXISTS pg_probe_rollup")
        made = conn.execute(
            "CREATE DYNAMIC TABLE pg_probe_rollup WITH (freshness = '5 minutes') AS "
            "SELECT host, count(*) AS n, sum(value) AS s FROM gpu_metrics "
            "WHERE metric = 'pg-probe' GROUP BY ALL"
        ).fetchone()
        assert made is not None and "created" in made
        for value in (1.0, 40.0):
            conn.execute(
                "INSERT INTO gpu_metrics (ts, host, metric, value) "
                "VALUES (now(), 'pg-host', 'pg-probe', %s)",
                [value],
            )
        done = conn.execute("REFRESH DYNAMIC TABLE pg_probe_rollup").fetchone()
        assert done is not None and "incremental" in done
        got = conn.execute("SELECT n, s FROM pg_probe_rollup WHERE host = 'pg-host'").fetchone()
        assert got == (2, 41.0)
        mode = conn.execute(
            "SELECT resolved_mode FROM wanka.dynamic_tables WHERE name = 'pg_probe_rollup'"
        ).fetchone()
        assert mode == ("aggregate",)
        conn.execute("ALTER DYNAMIC TABLE pg_probe_rollup SET (freshness = '1 hour')")
        conn.execute("DROP DYNAMIC TABLE pg_probe_rollup")
        conn.execute("DELETE FROM gpu_metrics WHERE metric = 'pg-probe'")


def test_a_reader_may_not_define_one(served: Served) -> None:
    with (
        psycopg.connect(served.dsn("reader"), autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="DYNAMIC TABLE"),
    ):
        conn.execute("CREATE DYNAMIC TABLE nope WITH (freshness = '1 hour') AS SELECT 1 AS x")
