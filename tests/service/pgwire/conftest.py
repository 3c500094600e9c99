"""A served warehouse with users, reached over the PostgreSQL protocol."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from service.pgwire import Handle, start
from service.serve.server import Limits, Server
from tests.service.pgwire import realpg
from tests.warehouses import Warehouses
from warehouse.security import users

PASSWORD = "s3cret-pw"

SEED = """
CREATE TABLE IF NOT EXISTS main.pg_types_probe (
    i INTEGER, b BIGINT, s SMALLINT, f DOUBLE, r REAL, n DECIMAL(12, 3), t VARCHAR, ok BOOLEAN,
    d DATE, ts TIMESTAMP, tz TIMESTAMPTZ, iv INTERVAL, u UUID, raw BLOB, ints INTEGER[],
    texts VARCHAR[]
);
INSERT INTO main.pg_types_probe VALUES
    (1, 9000000000, 7, 1.5, 2.25, 12345.678, 'gpu001', true, DATE '2024-03-01',
     TIMESTAMP '2024-03-01 12:00:00.5', TIMESTAMPTZ '2024-03-01 12:00:00+00',
     INTERVAL '1 day 2 hours', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x00\\xff'::BLOB,
     [1, 2, NULL], ['a b', 'c']),
    (2, -1, -7, -0.1, NULL, -0.5, 'it''s', false, NULL, NULL, NULL, NULL, NULL, NULL, [], NULL),
    (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL);
"""


@dataclass
class Served:
    """A running pgwire endpoint over a fresh warehouse."""

    server: Server
    handle: Handle
    path: Path

    @property
    def port(self) -> int:
        return self.handle.port

    def dsn(self, user: str = "admin", password: str = PASSWORD, **extra: str) -> str:
        options = " ".join(f"{k}={v}" for k, v in extra.items())
        return (
            f"host=127.0.0.1 port={self.port} dbname=wanka user={user} password={password} "
            f"sslmode=disable {options}"
        ).strip()

    def url(self, driver: str = "psycopg", user: str = "admin") -> str:
        return f"postgresql+{driver}://{user}:{PASSWORD}@127.0.0.1:{self.port}/wanka"


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Served]:
    path = warehouses.empty(tmp_path_factory.mktemp("pgwire") / "w.duckdb", shipped=True)
    server = Server(str(path), limits=Limits(timeout_s=30))
    cur = server.engine.cursor()
    try:
        for role in users.ROLES:
            users.add_user(cur, role, role, PASSWORD)
        cur.execute(SEED)
    finally:
        cur.close()
    handle = start(server, "127.0.0.1", 0)
    yield Served(server, handle, path)
    handle.stop()
    server.close()


@pytest.fixture(scope="session")
def real_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[realpg.RealPostgres]:
    """A real PostgreSQL 15 beside the endpoint; skipped only where PostgreSQL is not installed."""
    binaries = realpg.find_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL server binaries (initdb, postgres) are not installed")
    server = realpg.start(tmp_path_factory.mktemp("realpg"), binaries)
    yield server
    server.stop()


@contextmanager
def side_by_side(
    served: Served,
    real_postgres: realpg.RealPostgres,
    *,
    pg_setup: Sequence[str] = (),
    wanka_setup: Sequence[str] = (),
) -> Iterator[tuple[psycopg.Connection, psycopg.Connection]]:
    """A real PostgreSQL 15 and the endpoint (as a reader), each given its set-up SQL first
    (wanka's run as admin), for tests that ask both the same thing."""
    if wanka_setup:
        with psycopg.connect(served.dsn("admin"), autocommit=True) as admin:
            for sql in wanka_setup:
                admin.execute(sql)
    with (
        psycopg.connect(real_postgres.dsn(), autocommit=True) as pg,
        psycopg.connect(served.dsn("reader"), autocommit=True) as wanka,
    ):
        for sql in pg_setup:
            pg.execute(sql)
        yield pg, wanka


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[int]:
    """A pgwire port over a fresh warehouse without users: loopback clients come in as admin."""
    path = warehouses.empty(tmp_path_factory.mktemp("raw") / "w.duckdb", shipped=True)
    server = Server(str(path))
    handle = start(server, "127.0.0.1", 0)
    yield handle.port
    handle.stop()
    server.close()
