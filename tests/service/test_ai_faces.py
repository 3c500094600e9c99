"""The AI functions through every face: `wanka sql`, HTTP, PostgreSQL wire; readers' grants."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from service.pgwire import Handle, start
from service.serve.server import Limits, Server
from tests.conftest import invoke_wanka
from tests.warehouse.ai.endpoint import Endpoint
from tests.warehouses import Warehouses
from warehouse.security.users import add_user

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's note about httpx vs httpx2
    from fastapi.testclient import TestClient

PASSWORD = "s3cret-pw"
CLASSIFY = (
    "SELECT ai_classify('NVRM: GPU at PCI:0000:3b:00 has fallen off the bus', "
    "['Faulty GPU', 'Network Switch/Cable']) AS cause"
)


@dataclass
class Faces:
    server: Server
    client: TestClient
    pg: Handle
    endpoint: Endpoint

    def dsn(self, user: str) -> str:
        return (
            f"host=127.0.0.1 port={self.pg.port} dbname=wanka user={user} "
            f"password={PASSWORD} sslmode=disable"
        )


@pytest.fixture(scope="module")
def faces(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Faces]:
    from service.http import create_app

    endpoint = Endpoint()
    path = warehouses.empty(Path(tmp_path_factory.mktemp("ai-faces")) / "w.duckdb")
    with Server(str(path), limits=Limits(timeout_s=20)) as server:
        server.start()
        cur = server.engine.cursor()
        for role in ("reader", "writer", "admin"):
            add_user(cur, role, role, PASSWORD)
        for name in ("granted", "secret"):
            cur.execute(
                "INSERT INTO wanka.ai_models (name, task, endpoint, model) "
                "VALUES (?, 'chat', ?, 'tiny')",
                [name, f"{endpoint.url}/ok/v1"],
            )
        cur.execute("INSERT INTO wanka.ai_grants VALUES ('granted', 'reader')")
        cur.close()
        pg = start(server, "127.0.0.1", 0)
        with TestClient(create_app(server), raise_server_exceptions=False) as client:
            yield Faces(server, client, pg, endpoint)
        pg.stop()
    endpoint.close()


def test_wanka_sql(cli_db: Path) -> None:
    done = invoke_wanka("--db", str(cli_db), "sql", CLASSIFY, "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["cause", "Faulty GPU"]
    done = invoke_wanka("--db", str(cli_db), "sql", "SELECT ai_gen('hi', 'nowhere')")
    assert done.returncode != 0 and "'nowhere' is not registered" in done.stderr


def test_http(faces: Faces) -> None:
    answer = faces.client.post(
        "/v1/query", json={"sql": CLASSIFY, "format": "json"}, auth=("reader", PASSWORD)
    )
    assert answer.status_code == 200, answer.text
    assert "Faulty GPU" in answer.text
    sql = "SELECT ai_gen('a question', 'granted') AS a"
    answer = faces.client.post("/v1/query", json={"sql": sql}, auth=("reader", PASSWORD))
    assert answer.status_code == 200 and "answer to: a question" in answer.text


def test_http_reader_may_call_only_granted_models(faces: Faces) -> None:
    for sql in (
        "SELECT ai_gen('a question', 'secret')",
        "SELECT ai_gen('a question', m) FROM (SELECT 'granted' AS m)",
        "SELECT wanka_ai_call('gen', 'secret', 'x', '{}', 'null', 0)",
    ):
        answer = faces.client.post("/v1/query", json={"sql": sql}, auth=("reader", PASSWORD))
        assert answer.status_code == 403, (sql, answer.text)
    sql = "SELECT ai_gen('a question', 'secret') AS a"
    answer = faces.client.post("/v1/query", json={"sql": sql}, auth=("writer", PASSWORD))
    assert answer.status_code == 200 and "answer to" in answer.text


def test_postgresql_wire(faces: Faces) -> None:
    with psycopg.connect(faces.dsn("reader"), autocommit=True) as conn:
        assert conn.execute(CLASSIFY).fetchall() == [("Faulty GPU",)]
        similar = conn.execute("SELECT ai_similarity('link down', 'link down')").fetchall()
        assert abs(similar[0][0] - 1) < 1e-6
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT ai_summarize('x', 'secret')")


def test_postgresql_wire_named_arguments_and_details(faces: Faces) -> None:
    with psycopg.connect(faces.dsn("writer"), autocommit=True) as conn:
        got = conn.execute("SELECT ai_gen('wire', 'granted', on_error => 'raise')").fetchall()
        assert got == [("answer to: wire",)]
        detail = conn.execute("SELECT (ai_gen_detail('wire', 'granted')).value").fetchall()
        assert detail == [("answer to: wire",)]
        # a fixed-size FLOAT[256] arrives as JSON text; cast to FLOAT[] for a float4[] array
        as_json = conn.execute("SELECT ai_embed('wire')").fetchall()[0][0]
        as_array = conn.execute("SELECT ai_embed('wire')::FLOAT[]").fetchall()[0][0]
        assert len(as_array) == 256 and len(json.loads(as_json)) == 256
        assert abs(sum(x * x for x in as_array) - 1) < 1e-4
