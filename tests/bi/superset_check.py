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
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.bi.api import Api, Context
from tests.bi.charts import GRAINS, Charts
from tests.bi.harness import Report, StepFailed, SupersetHome, Wanka, quiet_into
from tests.bi.sqllab import SqlLab
from tests.bi.truth import Truth

SECRET_TABLES = {
    "users",
    "tokens",
}  # wanka's policy refuses them to every role; no catalog lists them


class SupersetCheck(Context):
    """Setting up, connecting and browsing; `charts` and `lab` hold the steps after them."""

    def __init__(self, home: SupersetHome, wanka: Wanka) -> None:
        super().__init__()
        self.home, self.wanka = home, wanka
        self.charts = Charts(self)
        self.lab = SqlLab(self)

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


def steps(check: SupersetCheck) -> list[tuple[str, Callable[[], str]]]:
    home, wanka, charts = check.home, check.wanka, check.charts
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
        ("chart data: table (raw records)", check.charts.chart_table),
        *[
            (f"chart data: line, time grain {grain}", lambda g=grain: charts.chart_timeseries(g))
            for grain in GRAINS
        ],
        ("chart data: big number COUNT(*)", check.charts.chart_big_number),
        ("chart data: pie SUM(gpus) by state, filter", check.charts.chart_pie),
        ("chart data: bar AVG(elapsed_s), 2 filters", check.charts.chart_bar),
        ("sql lab: query in public", check.lab.lab_public),
        ("sql lab: schema wanka, unqualified table", check.lab.lab_wanka_schema),
        ("sql lab: estimate cost (EXPLAIN)", check.lab.estimate),
        ("sql lab: reader's INSERT refused", lambda: check.lab.refused(
            "INSERT INTO jobs (job_id) VALUES ('bi-check')", writes)),
        ("sql lab: reader's CREATE TABLE refused", lambda: check.lab.refused(
            "CREATE TABLE bi_check AS SELECT 1 AS a", created)),
        ("sql lab: unknown column, PostgreSQL's text", lambda: check.lab.unknown_column(False)),
        ("sql lab: unknown column, Superset's message", lambda: check.lab.unknown_column(True)),
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
