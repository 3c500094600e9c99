"""`make bi-check`: the real Apache Superset (its Flask app, REST API and CLI, in `.venv-bi`)
against `wanka serve` on the demo warehouse, as a logged-in admin would click through it: connect,
browse schemas and tables, make datasets, draw charts at each time grain, use SQL Lab. One
PASS/FAIL line per step, then `N of M steps passed`; exit status 1 when any step failed.

    .venv-bi/bin/python -m tests.bi.superset_check --wanka .venv/bin/wanka [--demo PATH]

Not a pytest module (tests/bi/conftest.py keeps it out of `make test`): it needs Superset's own
environment and about three minutes.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.bi.harness import Report, StepFailed, SupersetHome, Wanka, quiet_into
from tests.bi.truth import Truth

GRAINS = ("PT1M", "PT1H", "P1D", "P1W", "P1M")
FINE_GRAINS = ("PT1M", "PT1H")  # over the demo's last hour or day of jobs; the others over all
SUM_GPUS = {"expressionType": "SIMPLE", "column": {"column_name": "gpus"}, "aggregate": "SUM",
            "label": "SUM(gpus)"}  # fmt: skip
AVG_ELAPSED = {"expressionType": "SIMPLE", "column": {"column_name": "elapsed_s"},
               "aggregate": "AVG", "label": "AVG(elapsed_s)"}  # fmt: skip
SECRET_TABLES = {
    "users",
    "tokens",
}  # wanka's policy refuses them to every role; no catalog lists them
COUNT_ALL = {"expressionType": "SQL", "sqlExpression": "COUNT(*)", "label": "COUNT(*)"}


def start_of(grain: str, moment: datetime) -> datetime:
    """The start of the `grain` period holding `moment` (weeks start on Monday, as in PostgreSQL).

    >>> start_of("P1W", datetime(2026, 11, 1, 0, 6)), start_of("P1M", datetime(2026, 11, 1, 0, 6))
    (datetime.datetime(2026, 10, 26, 0, 0), datetime.datetime(2026, 11, 1, 0, 0))
    """
    moment = moment.replace(second=0, microsecond=0)
    if grain == "PT1M":
        return moment
    moment = moment.replace(minute=0)
    if grain == "PT1H":
        return moment
    moment = moment.replace(hour=0)
    if grain == "P1W":
        return moment - timedelta(days=moment.weekday())
    return moment.replace(day=1) if grain == "P1M" else moment


def error_of(payload: Any) -> tuple[str, str]:
    """(message, Superset's error type) of an API error answer."""
    if isinstance(payload, dict) and payload.get("errors"):
        first = payload["errors"][0]
        return str(first.get("message", "")).strip(), str(first.get("error_type", ""))
    if isinstance(payload, dict) and "message" in payload:
        return str(payload["message"]).strip(), ""
    return str(payload)[:300], ""


class Api:
    """Superset's REST API through its Flask test client, with an admin's bearer token."""

    def __init__(self, client: Any, token: str) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"}

    def get(self, path: str, **query: Any) -> tuple[int, Any]:
        answer = self.client.get(path, query_string=query, headers=self.headers)
        return answer.status_code, answer.get_json(silent=True)

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        answer = self.client.post(path, json=body, headers=self.headers)
        return answer.status_code, answer.get_json(silent=True)

    def ok(self, answer: tuple[int, Any], *expected: int) -> Any:
        status, payload = answer
        if status not in (expected or (200,)):
            raise StepFailed(f"HTTP {status}: {error_of(payload)[0]}")
        return payload


class SupersetCheck:
    """The steps, in the order a person meets them; each returns its figure or raises."""

    def __init__(self, home: SupersetHome, wanka: Wanka) -> None:
        self.home, self.wanka = home, wanka
        self.truth: Truth | None = None
        self._api: Api | None = None
        self._database_id: int | None = None
        self.datasets: dict[str, int] = {}
        self.last_client_id = ""

    # --- what later steps need -------------------------------------------------------------
    @property
    def api(self) -> Api:
        if self._api is None:
            raise StepFailed("not run: no logged-in Superset")
        return self._api

    @property
    def database_id(self) -> int:
        if self._database_id is None:
            raise StepFailed("not run: the database was not created")
        return self._database_id

    def known(self) -> Truth:
        if self.truth is None:
            raise StepFailed("not run: wanka is not serving")
        return self.truth

    def dataset(self, table: str) -> int:
        if table not in self.datasets:
            raise StepFailed(f"not run: no dataset on {table}")
        return self.datasets[table]

    # --- set-up ----------------------------------------------------------------------------
    def serve(self) -> str:
        figure = self.wanka.serve()
        self.truth = Truth.read(self.wanka)
        return figure

    def login(self) -> str:
        with quiet_into(self.home.log):
            from superset.app import create_app  # after SUPERSET_CONFIG_PATH is set

            app = create_app()
        client = app.test_client()
        body = {"username": self.home.admin, "password": self.home.password, "provider": "db"}
        answer = client.post("/api/v1/security/login", json=body)
        if answer.status_code != 200:
            raise StepFailed(f"HTTP {answer.status_code}: {answer.get_data(as_text=True)[:200]}")
        self._api = Api(client, answer.get_json()["access_token"])
        return f"POST /api/v1/security/login as {self.home.admin!r}: JWT"

    # --- the database ----------------------------------------------------------------------
    def test_connection(self) -> str:
        body = {"sqlalchemy_uri": self.wanka.url, "database_name": "wanka"}
        payload = self.api.ok(self.api.post("/api/v1/database/test_connection/", body))
        return f"{payload.get('message')} ({self.wanka.url.replace(self.wanka.password, '***')})"

    def create_database(self) -> str:
        body = {
            "database_name": "wanka",
            "sqlalchemy_uri": self.wanka.url,
            "expose_in_sqllab": True,
            "allow_dml": True,  # so that Superset passes writes on and wanka must refuse them
            "extra": '{"cost_estimate_enabled": true}',
        }
        payload = self.api.ok(self.api.post("/api/v1/database/", body), 201)
        self._database_id = int(payload["id"])
        return f"id {self._database_id}, driver {payload['result'].get('driver')}"

    def schemas(self) -> str:
        path = f"/api/v1/database/{self.database_id}/schemas/"
        found = set(self.api.ok(self.api.get(path, q="(force:!t)"))["result"])
        # SQLAlchemy's PostgreSQL dialect asks for nspname NOT LIKE 'pg_%', so Superset never
        # lists pg_catalog, on a real PostgreSQL either
        served = self.known().schemas
        expected = {name for name in served if not name.startswith("pg_")}
        wanted = {"public", "wanka", "information_schema"}
        if found != expected or not wanted <= found or "pg_catalog" not in served:
            raise StepFailed(f"{sorted(found)}; pg_namespace has {sorted(served)}")
        hidden = sorted(served - found)
        return f"{len(found)}: {', '.join(sorted(found))} (not listed: {', '.join(hidden)})"

    def tables(self, schema: str) -> str:
        from prison import dumps

        query = dumps({"schema_name": schema, "force": True})
        path = f"/api/v1/database/{self.database_id}/tables/"
        listed = {t["value"]: t["type"] for t in self.api.ok(self.api.get(path, q=query))["result"]}
        expected = self.known().relations[schema]
        if listed != expected:
            extra = sorted(set(listed) - set(expected))
            missing = sorted(set(expected) - set(listed))
            kinds = sorted(n for n in set(listed) & set(expected) if listed[n] != expected[n])
            raise StepFailed(
                f"{len(listed)} listed; not in information_schema: {extra}; "
                f"missing: {missing}; table/view differs: {kinds}"
            )
        if secret := SECRET_TABLES & set(listed):
            raise StepFailed(f"lists {sorted(secret)}, which no role may read")
        views = sum(kind == "view" for kind in listed.values())
        wanted = self.known().wanted[schema]
        if not wanted <= set(listed):
            raise StepFailed(f"{len(listed)} listed, without {sorted(wanted - set(listed))}")
        hidden = f"; {' and '.join(sorted(SECRET_TABLES))} hidden" if schema == "wanka" else ""
        return (
            f"{len(listed) - views} tables, {views} views, as information_schema.tables says; "
            f"incl. {', '.join(sorted(wanted))}{hidden}"
        )

    def table_metadata(self) -> str:
        path = f"/api/v1/database/{self.database_id}/table_metadata/"
        payload = self.api.ok(self.api.get(path, name="job_gpu_usage", schema="public"))
        columns = {c["name"]: c["type"] for c in payload["columns"]}
        expected = self.known().columns
        if list(columns) != list(expected):
            raise StepFailed(f"columns {list(columns)}; information_schema: {list(expected)}")
        if "TIMESTAMP" not in columns["first_ts"]:
            raise StepFailed(f"first_ts is {columns['first_ts']}, not a timestamp")
        return f"job_gpu_usage: {len(columns)} columns, first_ts {columns['first_ts']}"

    def create_dataset(self, table: str, time_column: str) -> str:
        body = {"database": self.database_id, "schema": "public", "table_name": table}
        dataset_id = int(self.api.ok(self.api.post("/api/v1/dataset/", body), 201)["id"])
        detail = self.api.ok(self.api.get(f"/api/v1/dataset/{dataset_id}"))["result"]
        temporal = sorted(c["column_name"] for c in detail["columns"] if c["is_dttm"])
        if time_column not in temporal:
            raise StepFailed(f"id {dataset_id}: {time_column} is not temporal ({temporal})")
        self.datasets[table] = dataset_id
        return f"id {dataset_id}: {len(detail['columns'])} columns, temporal {', '.join(temporal)}"

    # --- charts ----------------------------------------------------------------------------
    def chart_data(self, table: str, viz: str, query: dict[str, Any]) -> dict[str, Any]:
        """POST /api/v1/chart/data as the explore view sends it for `viz`; the first result."""
        dataset_id = self.dataset(table)
        body = {
            "datasource": {"id": dataset_id, "type": "table"},
            "force": True,
            "form_data": {"viz_type": viz, "datasource": f"{dataset_id}__table"},
            "queries": [query],
            "result_format": "json",
            "result_type": "full",
        }
        result: dict[str, Any] = self.api.ok(self.api.post("/api/v1/chart/data", body))["result"][0]
        if result.get("error") or result.get("status") != "success":
            raise StepFailed(f"{result.get('status')}: {result.get('error')}")
        return result

    def chart_table(self) -> str:
        query = {"columns": ["job_id", "energy_kwh", "util_pct"], "metrics": [], "row_limit": 10,
                 "orderby": [["energy_kwh", False]], "time_range": "No filter"}  # fmt: skip
        rows = self.chart_data("job_gpu_usage", "table", query)["data"]
        energy = [row["energy_kwh"] for row in rows]
        if len(rows) != min(10, self.known().usage_rows) or energy != sorted(energy, reverse=True):
            raise StepFailed(f"{len(rows)} rows, energy_kwh {energy}")
        return f"{len(rows)} rows, top energy_kwh {energy[0]:.1f}"

    def chart_timeseries(self, grain: str) -> str:
        axis = {"timeGrain": grain, "columnType": "BASE_AXIS", "sqlExpression": "submit_at",
                "label": "submit_at", "expressionType": "SQL"}  # fmt: skip
        query: dict[str, Any] = {
            "columns": [axis],
            "metrics": ["count"],
            "row_limit": 50000,
            "post_processing": [
                {"operation": "pivot", "options": {"index": ["submit_at"], "columns": [],
                 "aggregates": {"count": {"operator": "mean"}}, "drop_missing_columns": False}},
                {"operation": "flatten"},
            ],
        }  # fmt: skip
        truth = self.known()
        if grain in FINE_GRAINS:  # minutes over the last hour, hours over the last day
            end = truth.last_hour + timedelta(hours=1)
            start = end - timedelta(hours=1 if grain == "PT1M" else 24)
            span = f"{start:%Y-%m-%dT%H:%M:%S} : {end:%Y-%m-%dT%H:%M:%S}"
            query["filters"] = [{"col": "submit_at", "op": "TEMPORAL_RANGE", "val": span}]
            expected = truth.jobs_since[start]
        else:
            query["time_range"] = "No filter"
            expected = truth.jobs
        rows = self.chart_data("jobs", "echarts_timeseries_line", query)["data"]
        buckets = [datetime.fromtimestamp(row["submit_at"] / 1000, UTC) for row in rows]
        off = [b for b in buckets if start_of(grain, b) != b]
        total = round(sum(row["count"] or 0 for row in rows))
        if off or total != expected:
            raise StepFailed(
                f"{len(rows)} points, {len(off)} off the grain (first {off[:1]}), "
                f"{total} jobs where wanka counts {expected}"
            )
        return f"{len(rows)} points, all on the grain, {total:,} jobs"

    def chart_big_number(self) -> str:
        query = {"metrics": [COUNT_ALL], "columns": [], "time_range": "No filter"}
        value = self.chart_data("jobs", "big_number_total", query)["data"][0]["COUNT(*)"]
        if value != self.known().jobs:
            raise StepFailed(f"{value} where wanka counts {self.known().jobs}")
        return f"{value:,} jobs"

    def chart_pie(self) -> str:
        query = {"columns": ["state"], "metrics": [SUM_GPUS], "row_limit": 100,
                 "filters": [{"col": "gpus", "op": ">", "val": 0}],
                 "orderby": [[SUM_GPUS, False]], "time_range": "No filter"}  # fmt: skip
        rows = self.chart_data("jobs", "pie", query)["data"]
        slices = {row["state"]: row["SUM(gpus)"] for row in rows}
        if slices != self.known().gpus_by_state:
            raise StepFailed(f"{slices} where wanka sums {self.known().gpus_by_state}")
        return f"{len(slices)} slices, SUM(gpus) {sum(slices.values()):,} where gpus > 0"

    def chart_bar(self) -> str:
        axis = {"columnType": "BASE_AXIS", "sqlExpression": "gpu_type", "label": "gpu_type",
                "expressionType": "SQL"}  # fmt: skip
        query = {"columns": [axis], "metrics": [AVG_ELAPSED], "row_limit": 1000,
                 "filters": [{"col": "state", "op": "==", "val": "COMPLETED"},
                             {"col": "gpus", "op": ">=", "val": 1}],
                 "orderby": [[AVG_ELAPSED, False]], "time_range": "No filter"}  # fmt: skip
        rows = self.chart_data("jobs", "echarts_timeseries_bar", query)["data"]
        bars = {row["gpu_type"]: row["AVG(elapsed_s)"] for row in rows if row["gpu_type"]}
        expected = self.known().avg_elapsed_by_gpu_type
        wrong = {k for k in expected if abs((bars.get(k) or -1) - expected[k]) > 1e-6 * expected[k]}
        if wrong or set(bars) != set(expected):
            raise StepFailed(f"bars {sorted(bars)} vs {sorted(expected)}; differ: {sorted(wrong)}")
        return f"{len(bars)} bars of AVG(elapsed_s) by gpu_type, COMPLETED jobs with GPUs"

    # --- SQL Lab ---------------------------------------------------------------------------
    def sqllab(self, sql: str, schema: str) -> tuple[int, Any]:
        self.last_client_id = secrets.token_hex(5)
        body = {
            "database_id": self.database_id,
            "sql": sql,
            "schema": schema,
            "runAsync": False,
            "client_id": self.last_client_id,
            "queryLimit": 1000,
            "sql_editor_id": "bi-check",
            "tab": "bi-check",
        }
        return self.api.post("/api/v1/sqllab/execute/", body)

    def database_error(self) -> str:
        """The driver's own text of the last SQL Lab query's error, as Superset stored it (its
        answer may show its own message instead)."""
        from prison import dumps

        query = dumps({"columns": ["client_id", "error_message"], "page_size": 20,
                       "order_column": "changed_on", "order_direction": "desc"})  # fmt: skip
        for row in self.api.ok(self.api.get("/api/v1/query/", q=query))["result"]:
            if row["client_id"] == self.last_client_id:
                return str(row["error_message"] or "")
        return "(not found in /api/v1/query/)"

    def lab_rows(self, sql: str, schema: str) -> list[dict[str, Any]]:
        status, payload = self.sqllab(sql, schema)
        if status != 200 or payload.get("status") != "success":
            raise StepFailed(f"HTTP {status}: {error_of(payload)[0]}")
        rows: list[dict[str, Any]] = payload["data"]
        return rows

    def lab_public(self) -> str:
        rows = self.lab_rows("SELECT state, count(*) AS jobs FROM jobs GROUP BY state", "public")
        total = sum(row["jobs"] for row in rows)
        if total != self.known().jobs:
            raise StepFailed(f"{total} jobs where wanka counts {self.known().jobs}")
        return f"{len(rows)} rows, {total:,} jobs"

    def lab_wanka_schema(self) -> str:
        rows = self.lab_rows("SELECT name, state FROM dynamic_tables", "wanka")
        names = {row["name"] for row in rows}
        if "job_gpu_usage" not in names:
            raise StepFailed(f"{len(rows)} rows without job_gpu_usage")
        return f'{len(rows)} dynamic tables (set search_path = "wanka" first)'

    def estimate(self) -> str:
        sql = "SELECT state, count(*) FROM jobs GROUP BY state"
        body = {"database_id": self.database_id, "sql": sql, "schema": "public"}
        cost = self.api.ok(self.api.post("/api/v1/sqllab/estimate/", body))["result"]
        if not any("Total cost" in row for row in cost):
            status, payload = self.sqllab(f"EXPLAIN {sql}", "public")
            shape = [c["name"] for c in payload.get("columns", [])] if status == 200 else status
            raise StepFailed(
                f"result {cost}: no 'cost=a..b' in EXPLAIN's first row; EXPLAIN's columns "
                f"{shape} (PostgreSQL: ['QUERY PLAN'])"
            )
        return ", ".join(f"{k} {v}" for row in cost for k, v in row.items())

    def refused(self, sql: str, proof: str) -> str:
        status, payload = self.sqllab(sql, "public")
        message, kind = error_of(payload)
        if status == 200 and payload.get("status") == "success":
            raise StepFailed(f"the reader's {sql.split()[0].upper()} succeeded")
        if kind != "GENERIC_DB_ENGINE_ERROR":
            raise StepFailed(f"stopped by Superset, not wanka: {kind}: {message}")
        left = self.lab_rows(proof, "public")[0]["n"]
        if left:
            raise StepFailed(f"error {message!r} but {left} rows were written")
        return f"HTTP {status}, nothing written: {message}"

    def unknown_column(self, friendly: bool) -> str:
        status, payload = self.sqllab("SELECT no_such_column FROM jobs", "public")
        message, kind = error_of(payload)
        if friendly:  # Superset's COLUMN_DOES_NOT_EXIST_REGEX wants PostgreSQL's LINE n too
            if kind != "COLUMN_DOES_NOT_EXIST_ERROR":
                raise StepFailed(f"HTTP {status}, {kind}: {message}")
            return f"HTTP {status}, {kind}: {message}"
        raw = self.database_error()  # the answer shows Superset's words once it matches
        if 'column "no_such_column" does not exist' not in raw:
            raise StepFailed(f"HTTP {status}: {raw}")
        return f"HTTP {status}: {raw}"


def steps(check: SupersetCheck) -> list[tuple[str, Callable[[], str]]]:
    home, wanka = check.home, check.wanka
    writes = "SELECT count(*) AS n FROM jobs WHERE job_id = 'bi-check'"
    created = "SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'bi_check'"
    return [
        ("superset db upgrade", lambda: home.cli("db", "upgrade")),
        ("superset fab create-admin", home.create_admin),
        ("superset init", lambda: home.cli("init")),
        ("wanka demo warehouse", wanka.build_demo),
        ("wanka serve (HTTP + PostgreSQL wire)", check.serve),
        ("superset app: API login", check.login),
        ("database: test connection", check.test_connection),
        ("database: create", check.create_database),
        ("database: list schemas", check.schemas),
        ("database: list tables in public", lambda: check.tables("public")),
        ("database: list tables in wanka", lambda: check.tables("wanka")),
        (
            "database: list tables in information_schema",
            lambda: check.tables("information_schema"),
        ),
        ("database: table metadata", check.table_metadata),
        ("dataset: public.job_gpu_usage",
         lambda: check.create_dataset("job_gpu_usage", "first_ts")),
        ("dataset: public.jobs", lambda: check.create_dataset("jobs", "submit_at")),
        ("chart data: table (raw records)", check.chart_table),
        *[
            (f"chart data: line, time grain {grain}", lambda g=grain: check.chart_timeseries(g))
            for grain in GRAINS
        ],
        ("chart data: big number COUNT(*)", check.chart_big_number),
        ("chart data: pie SUM(gpus) by state, filter", check.chart_pie),
        ("chart data: bar AVG(elapsed_s), 2 filters", check.chart_bar),
        ("sql lab: query in public", check.lab_public),
        ("sql lab: schema wanka, unqualified table", check.lab_wanka_schema),
        ("sql lab: estimate cost (EXPLAIN)", check.estimate),
        ("sql lab: reader's INSERT refused", lambda: check.refused(
            "INSERT INTO jobs (job_id) VALUES ('bi-check')", writes)),
        ("sql lab: reader's CREATE TABLE refused", lambda: check.refused(
            "CREATE TABLE bi_check AS SELECT 1 AS a", created)),
        ("sql lab: unknown column, PostgreSQL's text", lambda: check.unknown_column(False)),
        ("sql lab: unknown column, Superset's message", lambda: check.unknown_column(True)),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wanka", default=".venv/bin/wanka", help="the wanka command")
    parser.add_argument(
        "--demo",
        type=Path,
        default=os.environ.get("WANKA_BI_DEMO") or None,
        help="demo warehouse to use, built there if missing and kept [default: $WANKA_BI_DEMO, "
        "else a fresh one in a temporary folder]",
    )
    parser.add_argument("--keep", action="store_true", help="keep the logs and Superset's home")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="wanka-bi-check-"))
    home = SupersetHome(scratch / "superset")
    home.home.mkdir()
    logging.basicConfig(filename=home.log, level=logging.INFO)
    logging.captureWarnings(True)
    demo = args.demo.resolve() if args.demo else scratch / "demo" / "demo.duckdb"
    wanka = Wanka([args.wanka], demo, scratch / "wanka.log")
    report = Report()
    print(f"Superset against wanka; logs under {scratch}", flush=True)
    try:
        home.write_config()
        for name, run in steps(SupersetCheck(home, wanka)):
            report.step(name, run)
    finally:
        wanka.stop()
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(report.summary())
    return 0 if report.passed == len(report.results) else 1


if __name__ == "__main__":
    sys.exit(main())
