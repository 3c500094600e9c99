"""Thousands of generated statements against the reader's guard (warehouse.security.policy).

A generator builds statements from dangerous cores (writes, DDL, file reads and writes,
settings, extensions, secrets, sequences) hidden inside the shapes SQL allows — CTEs,
subqueries, unions, lateral joins, EXPLAIN, comments, odd case and spacing, second statements —
next to harmless SELECTs. The oracle does not trust the guard's own idea of danger: whatever it
lets a reader run is then run on a locked-down database, and the test checks that no table
changed, no file was written or read, no setting moved and the sequence did not advance.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.conftest import Draw, examples
from warehouse.errors import UserError
from warehouse.kernel.engine import Engine
from warehouse.security.policy import authorize

SAFE = [
    "SELECT 1",
    "SELECT count(*) FROM jobs",
    "SELECT host, avg(value) FROM gpu_metrics GROUP BY host",
    "SELECT * FROM nodes WHERE gpus > 4",
    "SELECT * FROM range(3)",
    "SELECT name FROM wanka.dynamic_tables",
]


def dangerous(secret: Path, out: Path) -> list[str]:
    """Statements or expressions a reader must never get to run."""
    return [
        f"COPY (SELECT 1) TO '{out}'",
        f"COPY jobs TO '{out}' (FORMAT csv)",
        f"EXPORT DATABASE '{out.parent}'",
        f"ATTACH '{out}' AS other",
        "INSTALL httpfs",
        "LOAD json",
        "SET threads = 1",
        "RESET threads",
        "PRAGMA enable_profiling",
        "CALL pragma_version()",
        "CREATE TABLE t AS SELECT 1",
        "CREATE MACRO m(x) AS x",
        "CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')",
        "DROP TABLE jobs",
        "ALTER TABLE jobs ADD COLUMN z INTEGER",
        "INSERT INTO jobs (job_id) VALUES ('x')",
        "UPDATE nodes SET gpus = 0",
        "DELETE FROM gpu_metrics",
        "TRUNCATE gpu_metrics",
        "CHECKPOINT",
        "VACUUM",
        "DETACH warehouse",
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT * FROM read_csv_auto('{secret}')",
        f"SELECT * FROM read_text('{secret}')",
        f"SELECT * FROM read_blob('{secret}')",
        f"SELECT * FROM read_json('{secret}')",
        f"SELECT * FROM read_parquet('{secret}')",
        f"SELECT * FROM '{secret}'",
        f"SELECT * FROM glob('{secret.parent}/*')",
        f"SELECT * FROM sniff_csv('{secret}')",
        "SELECT * FROM query('DELETE FROM jobs')",
        "SELECT * FROM query_table('jobs')",
        "SELECT * FROM duckdb_secrets()",
        "SELECT * FROM duckdb_settings()",
        "SELECT nextval('wanka.batch_seq')",
        "SELECT setseed(0.5)",
        "SELECT getenv('HOME')",
        "SELECT * FROM wanka.users",
        "SELECT * FROM wanka.tokens",
        "CREATE DYNAMIC TABLE d WITH (freshness = '1 hour') AS SELECT 1 AS x",
        "REFRESH DYNAMIC TABLE gpu_hourly_host",
    ]


def wrap(draw: Draw, core: str) -> str:
    """Hide `core` in a shape a statement can take."""
    shape = draw(
        st.sampled_from(
            [
                "{c}",
                "{safe}; {c}",
                "{c}; {safe}",
                "EXPLAIN {c}",
                "EXPLAIN ANALYZE {c}",
                "/* {safe} */ {c}",
                "-- note\n{c}",
                "WITH x AS ({c}) SELECT * FROM x",
                "SELECT * FROM ({c}) AS s",
                "{safe} UNION ALL {c}",
                "SELECT * FROM nodes, LATERAL ({c}) AS l",
                "SELECT (SELECT count(*) FROM ({c})) AS n",
                "SELECT 1 WHERE EXISTS ({c})",
                "(({c}))",
                "{c} ;",
                "\t {c}\n",
            ]
        )
    )
    if draw(st.booleans()):
        core = (
            "".join(ch.upper() if draw(st.booleans()) else ch.lower() for ch in core[:12])
            + (core[12:])
        )
    return shape.format(c=core, safe=draw(st.sampled_from(SAFE)))


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Path, Path]]:
    folder = tmp_path_factory.mktemp("guard")
    secret = folder / "secret.csv"
    secret.write_text("password\nhunter2\n")
    out = folder / "out.csv"
    with Engine(str(folder / "w.duckdb")) as engine:
        engine.con.execute(
            "INSERT INTO nodes (host, gpus) VALUES ('h1', 8); "
            "INSERT INTO jobs (job_id, gpus) VALUES ('j1', 8)"
        )
        engine.lock_down()
        yield engine, secret, out


def fingerprint(cur: duckdb.DuckDBPyConnection) -> tuple[object, ...]:
    """What a write would change: table list, row counts, the batch sequence, a setting."""
    tables = cur.execute(
        "SELECT list(schema_name || '.' || table_name || ':' || estimated_size ORDER BY ALL) "
        "FROM duckdb_tables()"
    ).fetchall()[0][0]
    counts = cur.execute(
        "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM nodes), "
        "(SELECT count(*) FROM gpu_metrics), current_setting('threads')"
    ).fetchall()[0]
    seq = cur.execute(
        "SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'batch_seq'"
    ).fetchall()[0][0]
    return (tables, counts, seq)


@pytest.mark.slow
@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_nothing_a_reader_may_run_writes_or_reads_files(
    data: st.DataObject, locked: tuple[Engine, Path, Path]
) -> None:
    engine, secret, out = locked
    # harmless cores too, so the oracle below runs on what the guard lets through
    core = data.draw(st.sampled_from(dangerous(secret, out) + SAFE))
    sql = wrap(data.draw, core)
    cur = engine.cursor()
    try:
        try:
            authorize(cur, sql, "reader")
        except UserError:
            event("refused")
            return  # refused (or not even SQL): nothing ran
        event("let through, then run")
        # the guard let it through: it must be harmless whatever it is
        before = fingerprint(cur)
        try:
            rows = cur.execute(sql).fetchall()
        except duckdb.Error:
            rows = []
        assert fingerprint(cur) == before, sql
        assert not out.exists(), sql
        assert "hunter2" not in repr(rows), sql
    finally:
        cur.close()
