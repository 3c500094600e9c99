"""PromQL in SQL: promql_range / promql_query give the rows the query API gives, take their
times as SQL constants, refuse anything else in an argument, join with warehouse tables, run
in a reader's session, and keep a dynamic table that is evaluated afresh at each refresh."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from service.serve.server import Server
from tests.warehouse.promql import reference as ref
from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.promql import evaluate, render, sql_function
from warehouse.query import executor
from warehouse.security.users import add_user

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

START_S = ref.T0 // 1000 + 600
END_S = ref.T_END // 1000
PASSWORD = "s3cret-pw"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Server]:
    path = warehouses.empty(Path(tmp_path_factory.mktemp("promsql")) / "w.duckdb", shipped=True)
    with Server(str(path)) as served:
        ref.load_wanka(served.engine, ref.cluster())
        cur = served.engine.cursor()
        add_user(cur, "reader", "reader", PASSWORD)
        hosts = sorted({dict(labels)["Hostname"] for labels in ref.cluster() if
                        "Hostname" in dict(labels)})  # fmt: skip
        for i, host in enumerate(hosts):
            cur.execute(
                "INSERT INTO nodes (host, rack, gpus) VALUES (?, ?, 8)", [host, f"r{i % 2}"]
            )
        cur.close()
        yield served


@pytest.fixture
def cur(server: Server) -> Iterator[duckdb.DuckDBPyConnection]:
    cursor = server.engine.cursor()
    yield cursor
    cursor.close()


def rows(cur: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    return list(executor.execute(cur, sql).read_all().to_pylist())


Points = dict[tuple[int, tuple[tuple[str, str], ...]], float]


def api_points(expression: str, start_ms: int, end_ms: int, step_ms: int, cur: Any) -> Points:
    """What /api/v1/query_range answers: (time ms, labels) -> value."""
    compiled = evaluate.range_query(expression, start_ms, end_ms, step_ms)
    data = render.data(compiled, cur.execute(compiled.sql).fetchall())
    return {
        (round(float(t) * 1000), tuple(sorted(s["metric"].items()))): float(v)
        for s in data["result"]
        for t, v in s["values"]
    }


def table_points(found: list[dict[str, Any]]) -> Points:
    return {(round(r["ts"].timestamp() * 1000), tuple(sorted(r["labels"]))): r["value"]
            for r in found}  # fmt: skip


def same(ours: Points, theirs: Points) -> bool:
    """The same points, values within 1e-9 relative (sums in another order)."""
    return ours.keys() == theirs.keys() and all(
        math.isclose(v, theirs[k], rel_tol=1e-9) or (math.isnan(v) and math.isnan(theirs[k]))
        for k, v in ours.items()
    )


@pytest.mark.parametrize(
    "expression",
    [
        "rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m])",
        "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)",
        'DCGM_FI_DEV_GPU_TEMP{gpu=~"0|1"} > 40',
        "count(DCGM_FI_DEV_GPU_TEMP)",
        "time()",
    ],
)
def test_promql_range_gives_the_points_the_query_api_gives(
    cur: duckdb.DuckDBPyConnection, expression: str
) -> None:
    sql = f"SELECT * FROM promql_range('{expression}', {START_S}, {END_S}, '1m')"
    found = rows(cur, sql)
    assert found and {type(r["value"]) for r in found} == {float}
    assert same(table_points(found), api_points(expression, START_S * 1000, END_S * 1000,
                                                60_000, cur))  # fmt: skip


def test_the_columns_are_ts_labels_value(cur: duckdb.DuckDBPyConnection) -> None:
    sql = f"SELECT * FROM promql_range('DCGM_FI_DEV_GPU_UTIL', {START_S}, {END_S}, 60) LIMIT 0"
    described = cur.execute(sql_function.expand(cur, sql)).description
    assert [(d[0], str(d[1])) for d in described] == [
        ("ts", "TIMESTAMP WITH TIME ZONE"),
        ("labels", "MAP(VARCHAR, VARCHAR)"),
        ("value", "DOUBLE"),
    ]


def test_times_and_steps_in_every_form_they_come(cur: duckdb.DuckDBPyConnection) -> None:
    iso = datetime.fromtimestamp(START_S, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    end_iso = datetime.fromtimestamp(END_S, UTC).strftime("%Y-%m-%d %H:%M:%S+00")
    forms = [
        f"{START_S}, {END_S}, 60",
        f"{START_S}.0, '{END_S}', '1m'",
        f"'{iso}', TIMESTAMPTZ '{end_iso}', INTERVAL 1 MINUTE",
        f"to_timestamp({START_S}), to_timestamp({START_S}) + INTERVAL '{END_S - START_S} seconds', "
        "INTERVAL '60 seconds'",
        f"epoch_ms({START_S * 1000}), epoch_ms({END_S * 1000}), 60.0",  # no zone: UTC
    ]
    answers = [
        table_points(rows(cur, f"SELECT * FROM promql_range('DCGM_FI_DEV_GPU_UTIL', {f})"))
        for f in forms
    ]
    assert answers[0] and all(same(a, answers[0]) for a in answers)


def test_promql_query_is_an_instant(cur: duckdb.DuckDBPyConnection) -> None:
    at = START_S + 300
    found = rows(
        cur, f"SELECT * FROM promql_query('count by (Hostname) (DCGM_FI_DEV_GPU_UTIL)', {at})"
    )
    assert len(found) == 4 and {r["value"] for r in found} == {4.0}
    assert {r["ts"] for r in found} == {datetime.fromtimestamp(at, UTC)}


def test_joined_with_nodes_and_grouped_in_sql(cur: duckdb.DuckDBPyConnection) -> None:
    sql = f"""
        SELECT n.rack, count(DISTINCT p.labels['Hostname']) AS hosts, round(avg(p.value), 6) AS w
        FROM promql_range('sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE)', {START_S}, {END_S}, '5m') p
        JOIN nodes n ON n.host = p.labels['Hostname']
        GROUP BY n.rack ORDER BY n.rack"""
    found = rows(cur, sql)
    assert [(r["rack"], r["hosts"]) for r in found] == [("r0", 2), ("r1", 2)]
    assert all(r["w"] > 0 for r in found)


@pytest.mark.parametrize(
    ("call", "says"),
    [
        ("promql_range('rate(x', 0, 10, 1)", "promql_range: parse error"),
        ("promql_range('up', (SELECT 1), 10, 1)", "must be a constant"),
        ("promql_range('up', host, 10, 1)", "must be a constant"),
        ("promql_range('up', ?, 10, 1)", "must be a constant"),
        ("promql_range('up', 0, 10)", "takes 4 arguments, 3 given"),
        ("promql_range(lower('up'), 0, 10, 1)", "must be a constant"),
        ("promql_range(42, 0, 10, 1)", "expr must be a string literal"),
        ("promql_range('up', 0, 1000000, 1)", "11,000 points"),
        ("promql_range('up', 0, 10, 0)", "zero or negative"),
        ("promql_range('up', 'yesterday', 10, 1)", "cannot read start 'yesterday'"),
        ("promql_range('up', 0, 10, 'often')", "cannot read step 'often'"),
        ("promql_query('up', NULL)", "time is NULL"),
        ("promql_query('sum(x) by', 0)", "promql_query: "),
        ("promql_query('count_values(\"v\", x)', 0)", "count_values"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(
    cur: duckdb.DuckDBPyConnection, call: str, says: str
) -> None:
    with pytest.raises(UserError) as raised:
        rows(cur, f"SELECT * FROM {call}")
    assert says in str(raised.value)


def test_the_words_in_strings_and_other_names_are_left_alone(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    sql = "SELECT 'promql_range(1)' AS a, 'x' AS promql_query"
    assert sql_function.expand(cur, sql) == sql
    assert rows(cur, sql) == [{"a": "promql_range(1)", "promql_query": "x"}]


def test_a_reader_calls_it_over_http_and_still_reads_no_secrets(server: Server) -> None:
    from service.http import create_app

    auth = ("reader", PASSWORD)
    expr = "max by (Hostname) (DCGM_FI_DEV_GPU_TEMP)"
    sql = f"SELECT count(*) AS n FROM promql_range('{expr}', {START_S}, {END_S}, '1m')"
    with TestClient(create_app(server)) as client:
        answer = client.post("/v1/query", json={"sql": sql}, auth=auth)
        assert answer.status_code == 200, answer.text
        assert answer.json()["rows"] == [[4 * ((END_S - START_S) // 60 + 1)]]
        sneaky = "SELECT * FROM promql_range('up', 0, 10, 1) p, wanka.users u"
        refused = client.post("/v1/query", json={"sql": sneaky}, auth=auth)
        assert refused.status_code == 403 and "wanka.users" in refused.text


def test_a_dynamic_table_evaluates_it_afresh_at_each_refresh(server: Server) -> None:
    cur = server.engine.cursor()
    hours = (int(datetime.now(UTC).timestamp()) - ref.T0 // 1000) // 3600 + 2
    created = rows(
        cur,
        "CREATE DYNAMIC TABLE host_power WITH (freshness = '1 minute') AS "
        "SELECT p.labels['Hostname'] AS host, p.ts, p.value AS watts, n.rack "
        "FROM promql_range('sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE)', "
        f"now() - INTERVAL {hours} HOUR, now(), INTERVAL 5 MINUTE) p "
        "JOIN nodes n ON n.host = p.labels['Hostname']",
    )[0]
    assert created["refresh_mode"] == "full" and "PromQL" in created["reason"]
    first = rows(cur, "SELECT count(*) AS n, max(ts) AS last FROM host_power")[0]
    assert first["n"] > 0
    later = ref.T_END + 600_000  # one GPU's power ten minutes on, stored now
    labels = next(k for k in ref.cluster() if dict(k)["__name__"] == "DCGM_FI_DEV_POWER_USAGE")
    ref.load_wanka(server.engine, {labels: [(later - 60_000, 300.0), (later, 300.0)]})
    refreshed = rows(cur, "REFRESH DYNAMIC TABLE host_power")[0]
    assert refreshed["status"] == "refreshed"
    after = rows(cur, "SELECT count(*) AS n, max(ts) AS last FROM host_power")[0]
    assert after["last"] > first["last"] and after["n"] > first["n"]
    last = rows(cur, "SELECT host, watts FROM host_power ORDER BY ts DESC LIMIT 1")[0]
    assert last == {"host": dict(labels)["Hostname"], "watts": 300.0}
    rows(cur, "DROP DYNAMIC TABLE host_power")
    cur.close()
