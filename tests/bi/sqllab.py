"""SQL Lab (`/api/v1/sqllab/...`): a query, a schema picked in the editor, the cost estimate, a
reader's writes refused, and an unknown column's error as PostgreSQL and Superset word it."""

from __future__ import annotations

import secrets
from typing import Any

from tests.bi.api import Context, error_of
from tests.bi.harness import StepFailed


class SqlLab:
    """The SQL Lab steps on the database made before them."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.last_client_id = ""

    def sqllab(self, sql: str, schema: str) -> tuple[int, Any]:
        self.last_client_id = secrets.token_hex(5)
        body = {
            "database_id": self.context.database_id,
            "sql": sql,
            "schema": schema,
            "runAsync": False,
            "client_id": self.last_client_id,
            "queryLimit": 1000,
            "sql_editor_id": "bi-check",
            "tab": "bi-check",
        }
        return self.context.api.post("/api/v1/sqllab/execute/", body)

    def database_error(self) -> str:
        """The driver's own text of the last SQL Lab query's error, as Superset stored it (its
        answer may show its own message instead)."""
        from prison import dumps

        query = dumps({"columns": ["client_id", "error_message"], "page_size": 20,
                       "order_column": "changed_on", "order_direction": "desc"})  # fmt: skip
        for row in self.context.api.ok(self.context.api.get("/api/v1/query/", q=query))["result"]:
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
        if total != self.context.known().jobs:
            raise StepFailed(f"{total} jobs where wanka counts {self.context.known().jobs}")
        return f"{len(rows)} rows, {total:,} jobs"

    def lab_wanka_schema(self) -> str:
        rows = self.lab_rows("SELECT name, state FROM dynamic_tables", "wanka")
        names = {row["name"] for row in rows}
        if "job_gpu_usage" not in names:
            raise StepFailed(f"{len(rows)} rows without job_gpu_usage")
        return f'{len(rows)} dynamic tables (set search_path = "wanka" first)'

    def estimate(self) -> str:
        sql = "SELECT state, count(*) FROM jobs GROUP BY state"
        body = {"database_id": self.context.database_id, "sql": sql, "schema": "public"}
        cost = self.context.api.ok(self.context.api.post("/api/v1/sqllab/estimate/", body))[
            "result"
        ]
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
