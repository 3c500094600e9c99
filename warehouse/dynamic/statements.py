"""CREATE / ALTER / REFRESH [FULL] / DROP DYNAMIC TABLE: wanka's own statements.

DuckDB does not know them: `warehouse.parsing.script` recognises them by their leading tokens (and
parses a CREATE into an `exp.Create`, whose properties and SELECT are taken from the tree);
`warehouse.query.executor.execute` (and `shipped`, for the shipped tables) hands each here. Each
statement returns one row: status, name, refresh_mode, reason, rows_inserted, rows_deleted,
upstream (for REFRESH, the dynamic tables it refreshed first and how, else NULL).
"""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pyarrow as pa
from sqlglot import exp
from sqlglot.tokenizer_core import Token, TokenType

from warehouse.dynamic import catalog, chain, dml
from warehouse.dynamic.plan import Full, parse_select, plan_query
from warehouse.dynamic.refresh import refresh
from warehouse.dynamic.schedule import upstream_of
from warehouse.engines.portable import spark_columns
from warehouse.errors import UserError
from warehouse.kernel.transactions import transaction
from warehouse.parsing.script import DynamicStatement
from warehouse.promql import sql_function


def run(cur: duckdb.DuckDBPyConnection, statement: DynamicStatement) -> pa.Table:
    """Execute one DYNAMIC TABLE statement and return its one-row result."""
    rest = list(statement.rest)
    if statement.verb == "CREATE":
        assert statement.tree is not None, "warehouse.parsing.script parses every CREATE"
        return create(cur, statement.tree.copy())
    if statement.verb == "ALTER":
        return alter(cur, rest)
    if statement.verb == "REFRESH":
        words = [t.text.upper() for t in rest[1:]]
        if not rest or words not in ([], ["FULL"]):
            raise UserError("expected REFRESH DYNAMIC TABLE name [FULL]")
        return refresh_with_upstream(cur, catalog.check_name(rest[0].text), words == ["FULL"])
    return drop(cur, rest)


def refresh_with_upstream(cur: duckdb.DuckDBPyConnection, name: str, full: bool) -> pa.Table:
    """REFRESH DYNAMIC TABLE name [FULL]: the dynamic tables `name` reads, directly or not, in
    dependency order (incrementally), then `name`, all at one data timestamp — as `wanka
    refresh NAME` does. One row, `name`'s, with `upstream` saying what was refreshed first; the
    first failure is raised (recorded, and the tables after it left alone)."""
    at = datetime.now(UTC)
    before = [refresh(cur, each, data_timestamp=at) for each in upstream_of(cur, name)]
    result = refresh(cur, name, full=full, data_timestamp=at)
    said = ", ".join(f"{r.name}: {r.refresh_mode}" for r in before) or None
    return _row(
        "refreshed",
        name,
        result.refresh_mode,
        result.reason,
        result.rows_inserted,
        result.rows_deleted,
        upstream=said,
    )


def _row(
    status: str,
    name: str,
    mode: str | None,
    reason: str | None,
    inserted: int = 0,
    deleted: int = 0,
    upstream: str | None = None,
) -> pa.Table:
    return pa.table(
        {
            "status": [status],
            "name": [name],
            "refresh_mode": pa.array([mode], pa.string()),
            "reason": pa.array([reason], pa.string()),
            "rows_inserted": pa.array([inserted], pa.int64()),
            "rows_deleted": pa.array([deleted], pa.int64()),
            "upstream": pa.array([upstream], pa.string()),
        }
    )


def _properties(create_: exp.Create) -> dict[str, str]:
    found: dict[str, str] = {}
    props = create_.args.get("properties")
    for prop in props.expressions if props else []:
        value = prop.args.get("value")
        if isinstance(prop, exp.Property) and value is not None:
            text = value.name if isinstance(value, exp.Literal) else value.sql("duckdb")
            found[prop.name.lower()] = text
    return found


def _check_properties(cur: duckdb.DuckDBPyConnection, props: dict[str, str]) -> dict[str, str]:
    unknown = sorted(set(props) - {"freshness", "refresh_mode"})
    if unknown:
        raise UserError(f"unknown dynamic table property {unknown[0]}: use freshness, refresh_mode")
    checked = {}
    if "freshness" in props:
        checked["freshness"] = catalog.check_freshness(cur, props["freshness"])
    if "refresh_mode" in props:
        checked["refresh_mode"] = catalog.check_mode(props["refresh_mode"])
    return checked


def create(cur: duckdb.DuckDBPyConnection, tree: exp.Create) -> pa.Table:
    """CREATE DYNAMIC TABLE [IF NOT EXISTS] name WITH (...) AS SELECT ..."""
    name = catalog.check_name(tree.this.name if isinstance(tree.this, exp.Table) else "")
    props = _check_properties(cur, _properties(tree))
    freshness = props.get("freshness")
    if freshness is None:
        raise UserError("property freshness is required, e.g. WITH (freshness = '5 minutes')")
    mode = props.get("refresh_mode", "auto")
    if name in catalog.names(cur):
        if tree.args.get("exists"):
            return _row("exists", name, None, None)
        raise UserError(f"dynamic table {name} already exists")
    try:
        query = sql_function.expand(cur, tree.expression.sql("duckdb"))
        cur.execute(f"SELECT * FROM ({query}) LIMIT 0").fetchall()
    except duckdb.Error as error:
        raise UserError(f"the query of dynamic table {name} fails: {error}") from None
    plan = plan_query(tree.expression, name, cur, catalog.names(cur), mode=mode)
    if mode == "incremental" and isinstance(plan, Full):
        raise UserError(f"refresh_mode = 'incremental' is refused for {name}: {plan.reason}")
    try:
        with transaction(cur):
            for ddl in dml.create_tables(name, plan):
                cur.execute(sql_function.expand(cur, ddl))
            for source in plan.sources:
                if source in catalog.names(cur):
                    chain.track(cur, source)
            catalog.insert(cur, name, freshness, mode, plan)
            catalog.update(cur, name, **spark_columns(plan.query))  # said now, not at refresh
    except duckdb.Error as error:
        raise UserError(f"cannot create dynamic table {name}: {error}") from None
    result = refresh(cur, name, full=True)
    return _row("created", name, plan.kind, plan.reason, result.rows_inserted)


def _assignments(tokens: list[Token]) -> dict[str, str]:
    """`SET ( key = 'value' [, ...] )` from tokens."""
    words = [t.text for t in tokens]
    if len(tokens) < 5 or words[0].upper() != "SET" or words[1] != "(" or words[-1] != ")":
        raise UserError("expected ALTER DYNAMIC TABLE name SET (freshness = '...', ...)")
    found, inner = {}, tokens[2:-1]
    for i in range(0, len(inner), 4):
        part = inner[i : i + 4]
        if len(part) < 3 or part[1].token_type != TokenType.EQ:
            raise UserError("expected key = 'value' pairs in SET (...)")
        found[part[0].text.lower()] = part[2].text
    return found


def alter(cur: duckdb.DuckDBPyConnection, rest: list[Token]) -> pa.Table:
    """ALTER DYNAMIC TABLE name SET (freshness = '...', refresh_mode = '...')."""
    if not rest:
        raise UserError("expected ALTER DYNAMIC TABLE name SET (...)")
    name = catalog.check_name(rest[0].text)
    dt = catalog.load(cur, name)
    props = _check_properties(cur, _assignments(rest[1:]))
    mode = props.get("refresh_mode", dt.refresh_mode)
    plan = dt.plan
    if mode != dt.refresh_mode:
        plan = plan_query(
            parse_select(dt.definition),
            name,
            cur,
            catalog.names(cur) - {name},
            mode=mode,
        )
        if mode == "incremental" and isinstance(plan, Full):
            raise UserError(f"refresh_mode = 'incremental' is refused for {name}: {plan.reason}")
        if plan.kind != dt.plan.kind:
            raise UserError(
                f"changing {name} from {dt.plan.kind} to {plan.kind}: drop and create it"
            )
    catalog.update(
        cur,
        name,
        freshness=props.get("freshness", dt.freshness),
        refresh_mode=mode,
        resolved_mode=plan.kind,
        refresh_mode_reason=plan.reason,
        plan=plan,
    )
    return _row("altered", name, plan.kind, plan.reason)


def drop(cur: duckdb.DuckDBPyConnection, rest: list[Token]) -> pa.Table:
    """DROP DYNAMIC TABLE [IF EXISTS] name."""
    words = [t.text.upper() for t in rest]
    if_exists = words[:2] == ["IF", "EXISTS"]
    rest = rest[2:] if if_exists else rest
    if len(rest) != 1:
        raise UserError("expected DROP DYNAMIC TABLE [IF EXISTS] name")
    name = catalog.check_name(rest[0].text)
    if name not in catalog.names(cur):
        if if_exists:
            return _row("absent", name, None, None)
        raise UserError(f"no dynamic table named {name}")
    readers = catalog.consumers(cur, name)
    if readers:
        raise UserError(f"dynamic table {name} is read by {', '.join(readers)}: drop those first")
    try:
        with transaction(cur):
            for ddl in dml.drop_tables(name):
                cur.execute(ddl)
            chain.untrack(cur, name)
            cur.execute("DELETE FROM wanka.dynamic_tables WHERE name = ?", [name])
    except duckdb.Error as error:
        raise UserError(f"cannot drop dynamic table {name}: {error}") from None
    return _row("dropped", name, None, None)
