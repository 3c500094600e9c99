"""/v1/query: formats, row caps, time limits, parameters and errors."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from tests.service.http.conftest import Served

SLOW = "SELECT sum(hash(a.range * b.range)) FROM range(200000) a, range(200000) b"


def test_json_has_columns_types_rows_and_flags(served: Served) -> None:
    response = served.client.post(
        "/v1/query",
        json={"sql": "SELECT 42 AS n, 'x' AS s, 1.5 AS d, NULL AS z, 'nan'::DOUBLE AS f"},
        auth=served.auth("reader"),
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert [c["name"] for c in body["columns"]] == ["n", "s", "d", "z", "f"]
    assert body["columns"][0]["type"] == "int32"
    assert body["rows"] == [[42, "x", 1.5, None, None]]
    assert body["truncated"] is False and body["statement"] == "SELECT"
    assert body["elapsed_ms"] >= 0


def test_json_row_cap_sets_truncated(served: Served) -> None:
    response = served.client.post(
        "/v1/query", json={"sql": "SELECT * FROM range(5000)"}, auth=served.auth("reader")
    )
    body = response.json()
    assert len(body["rows"]) == 1000 and body["truncated"] is True
    response = served.client.post(
        "/v1/query",
        json={"sql": "SELECT * FROM range(5000)", "max_rows": 3},
        auth=served.auth("reader"),
    )
    assert response.json()["rows"] == [[0], [1], [2]]


def test_arrow_stream_is_not_capped(served: Served) -> None:
    response = served.client.post(
        "/v1/query",
        json={"sql": "SELECT range AS i FROM range(300000)", "format": "arrow"},
        auth=served.auth("reader"),
    )
    assert response.headers["content-type"] == "application/vnd.apache.arrow.stream"
    table = ipc.open_stream(response.content).read_all()
    assert table.num_rows == 300000 and table.column("i")[-1].as_py() == 299999


def test_parquet_csv_ndjson(served: Served) -> None:
    sql = "SELECT range AS i, [range, 1] AS l FROM range(3)"
    auth = served.auth("reader")
    parquet = served.client.post("/v1/query", json={"sql": sql, "format": "parquet"}, auth=auth)
    assert pq.read_table(io.BytesIO(parquet.content)).num_rows == 3
    csv = served.client.post("/v1/query", json={"sql": sql, "format": "csv"}, auth=auth)
    assert csv.text.splitlines() == ["i,l", '0,"[0, 1]"', '1,"[1, 1]"', '2,"[2, 1]"']
    nd = served.client.post("/v1/query", json={"sql": sql, "format": "ndjson"}, auth=auth)
    assert [json.loads(line) for line in nd.text.splitlines()][1] == {"i": 1, "l": [1, 1]}


def test_get_with_params(served: Served) -> None:
    response = served.client.get(
        "/v1/query",
        params={"sql": "SELECT ? + 1 AS x", "params": "[41]", "format": "csv"},
        auth=served.auth("reader"),
    )
    assert response.text == "x\n42\n"
    named = served.client.post(
        "/v1/query",
        json={"sql": "SELECT $a * 2 AS x", "params": {"a": 21}},
        auth=served.auth("reader"),
    )
    assert named.json()["rows"] == [[42]]


def test_time_limit_interrupts(served: Served) -> None:
    response = served.client.post(
        "/v1/query", json={"sql": SLOW, "timeout_s": 0.2}, auth=served.auth("reader")
    )
    assert response.status_code == 408
    assert "time limit of 0.2 s" in response.json()["error"]
    again = served.client.post("/v1/query", json={"sql": "SELECT 1"}, auth=served.auth("reader"))
    assert again.status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ({"sql": "SELEC 1"}, 400, "syntax error"),
        ({"sql": "SELECT * FROM nope"}, 400, "nope"),
        ({"sql": ""}, 400, "sql"),
        ({"sql": "SELECT 1", "format": "xml"}, 400, "format"),
        ({"sql": "SELECT 1", "max_rows": -1}, 400, "max_rows"),
        ({"sql": "SELECT 1", "extra": 1}, 400, "extra"),
    ],
)
def test_bad_input_is_400_json(
    served: Served, body: dict[str, object], status: int, text: str
) -> None:
    response = served.client.post("/v1/query", json=body, auth=served.auth("reader"))
    assert response.status_code == status
    assert text in response.json()["error"].lower()


def test_writer_dml_and_admin_ddl(served: Served) -> None:
    writer = served.client.post(
        "/v1/query",
        json={"sql": "INSERT INTO sites (site) VALUES ('gamma')"},
        headers={"Authorization": f"Bearer {served.token}"},
    )
    assert writer.status_code == 200 and writer.json()["rowcount"] == 1
    ddl = served.client.post(
        "/v1/query", json={"sql": "CREATE TABLE scratch (a INT)"}, auth=served.auth("writer")
    )
    assert ddl.status_code == 403 and "CREATE is refused" in ddl.json()["error"]
    admin = served.client.post(
        "/v1/query", json={"sql": "CREATE TABLE scratch (a INT)"}, auth=served.auth("admin")
    )
    assert admin.status_code == 200


def test_schema_resolves_unqualified_names_like_a_search_path(served: Served) -> None:
    def ask(sql: str, schema: str | None) -> tuple[int, dict[str, Any]]:
        body: dict[str, object] = {"sql": sql}
        if schema is not None:
            body["schema"] = schema
        response = served.client.post("/v1/query", json=body, auth=served.auth("reader"))
        return response.status_code, response.json()

    status, body = ask("SELECT count(*) AS n FROM dynamic_tables", "wanka")
    assert status == 200 and body["rows"][0][0] >= 1, body
    status, body = ask("SELECT count(*) AS n FROM sites", "wanka, public")
    assert status == 200 and body["rows"] == ask("SELECT count(*) FROM main.sites", None)[1]["rows"]
    status, body = ask("SELECT count(*) AS n FROM dynamic_tables", None)
    assert status == 400 and "dynamic_tables" in str(body["error"])
    status, body = ask("SELECT name FROM users", "wanka")  # not in the catalog: not found
    assert status == 400 and "users" in str(body["error"])
    status, body = ask("SELECT name FROM wanka.users", "wanka")
    assert status == 403 and "users" in str(body["error"])


def test_bad_column_is_worded_as_postgresql(served: Served) -> None:
    """`error` keeps its key with PostgreSQL's text; sqlstate, position and detail beside it."""
    response = served.client.post(
        "/v1/query", json={"sql": "SELECT no_such_col FROM sites"}, auth=served.auth("reader")
    )
    body = response.json()
    assert response.status_code == 400
    assert body["error"] == 'column "no_such_col" does not exist'
    assert body["sqlstate"] == "42703"
    assert body["position"] == 8
    assert body["detail"].startswith('Binder Error: Referenced column "no_such_col" not found')


def test_get_query_error_has_position_in_its_sql(served: Served) -> None:
    response = served.client.get(
        "/v1/query", params={"sql": "SELECT site + 1 FROM sites"}, auth=served.auth("reader")
    )
    body = response.json()
    assert response.status_code == 400
    assert body["error"] == "operator does not exist: text + integer"
    assert (body["sqlstate"], body["position"]) == ("42883", 13)
    assert body["hint"].startswith("No operator matches")
    assert len(body["detail"]) < 300  # without DuckDB's list of every overload of +


def test_refusal_says_permission_denied(served: Served) -> None:
    response = served.client.post(
        "/v1/query", json={"sql": "CREATE TABLE scratch2 (a INT)"}, auth=served.auth("writer")
    )
    body = response.json()
    assert response.status_code == 403
    assert body["error"].startswith("permission denied: ") and "CREATE is refused" in body["error"]
    assert body["sqlstate"] == "42501"


# -- options in the URL of a POST ----------------------------------------------------------------

SMALL = "SELECT range AS i FROM range(3)"
VENDOR_JSON = "application/vnd.api+json"  # JSON to FastAPI, not to the fast path


@pytest.fixture
def fast(served: Served, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[str]]]:
    """A client of an app whose fast path (service/http/fastpath.py) notes what it did with each
    request: 'answered', 'raised' (an error it words itself) or 'left' (to the route)."""
    from fastapi.testclient import TestClient

    from service.http import create_app, routes_query

    seen: list[str] = []
    real = routes_query.fast_query

    async def noting(request: Any, body: bytes) -> Any:
        try:
            response = await real(request, body)
        except Exception:
            seen.append("raised")
            raise
        seen.append("left" if response is None else "answered")
        return response

    monkeypatch.setattr(routes_query, "fast_query", noting)  # taken when the app first serves
    with TestClient(create_app(served.server), raise_server_exceptions=False) as client:
        yield client, seen


def post(served: Served, fast: tuple[Any, list[str]], path: str, body: Any, via: str) -> Any:
    """POST `body` as JSON: as application/json the fast path answers it (checked); as a JSON
    media type of a vendor's the FastAPI route does, which reads it the same."""
    client, seen = fast
    if via == "route":
        headers = {"content-type": VENDOR_JSON}
        done = client.post(
            path, content=json.dumps(body), headers=headers, auth=served.auth("reader")
        )
        assert seen == []
        return done
    done = client.post(path, json=body, auth=served.auth("reader"))
    assert seen in (["answered"], ["raised"]), seen
    return done


VIA = pytest.mark.parametrize("via", ["fast path", "route"])


@VIA
def test_a_format_in_the_url_of_a_post_is_honoured(
    served: Served, fast: tuple[Any, list[str]], via: str
) -> None:
    """`POST /v1/query?format=csv` used to answer JSON, the URL's format ignored."""
    done = post(served, fast, "/v1/query?format=csv", {"sql": SMALL}, via)
    assert done.status_code == 200, done.text
    assert done.headers["content-type"].startswith("text/csv")
    assert done.text.splitlines() == ["i", "0", "1", "2"]


@VIA
@pytest.mark.parametrize(
    ("url", "body", "check"),
    [
        ("?format=ndjson", {"format": "ndjson"}, lambda r: r.text.count("\n") == 3),
        ("?max_rows=2", {}, lambda r: r.json()["rows"] == [[0], [1]] and r.json()["truncated"]),
        ("?format=json", {}, lambda r: r.json()["rows"] == [[0], [1], [2]]),
    ],
    ids=["in both, the same", "max_rows", "json"],
)
def test_other_url_options_are_honoured_too(
    served: Served,
    fast: tuple[Any, list[str]],
    via: str,
    url: str,
    body: dict[str, Any],
    check: Callable[[Any], bool],
) -> None:
    done = post(served, fast, f"/v1/query{url}", {"sql": SMALL, **body}, via)
    assert done.status_code == 200 and check(done), done.text


@VIA
@pytest.mark.parametrize(
    ("url", "body", "said"),
    [
        (
            "?format=csv",
            {"format": "json"},
            "format is given twice and differs: 'csv' in the url, 'json' in the body",
        ),
        ("?max_rows=1", {"max_rows": 2}, "max_rows is given twice and differs: 1 in the url"),
        ("?format=xml", {}, "query.format: input should be"),
        ("?format=csv&format=json", {}, "format is given 2 times in the url"),
    ],
)
def test_a_url_option_that_contradicts_the_body_or_is_wrong_is_a_400(
    served: Served,
    fast: tuple[Any, list[str]],
    via: str,
    url: str,
    body: dict[str, Any],
    said: str,
) -> None:
    done = post(served, fast, f"/v1/query{url}", {"sql": SMALL, **body}, via)
    assert done.status_code == 400, done.text
    assert said in done.json()["error"].lower()


def test_an_analysis_takes_its_format_from_the_url_too(served: Served) -> None:
    """POST /v1/analyses/{name} takes a format in its body too, and ignored the URL's as well."""
    path, auth = "/v1/analyses/gpu_utilisation?format=csv", served.auth("reader")
    done = served.client.post(path, json={}, auth=auth)
    assert done.status_code == 200, done.text
    assert done.headers["content-type"].startswith("text/csv")
    refused = served.client.post(path, json={"format": "json"}, auth=auth)
    assert refused.status_code == 400 and "in the body" in refused.json()["error"]


def test_get_takes_a_schema_as_post_does(served: Served) -> None:
    """The docs said GET takes what POST's body does; it had no `schema`."""
    sql = "SELECT count(*) AS n FROM dynamic_tables"
    auth = served.auth("reader")
    found = served.client.get("/v1/query", params={"sql": sql, "schema": "wanka"}, auth=auth)
    assert found.status_code == 200 and found.json()["rows"][0][0] >= 1, found.text
    assert served.client.get("/v1/query", params={"sql": sql}, auth=auth).status_code == 400
