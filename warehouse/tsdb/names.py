"""The result's column names of a statement that `prune` rewrote, as the statement had them.

DuckDB names a column without an alias by the text of its expression as DuckDB writes it
back: `avg("value")`, `time_bucket(CAST('1 hour' AS INTERVAL), ts)`. A rewritten statement
is sqlglot's text, which writes the same expressions otherwise (`INTERVAL '1' HOUR`), and
the time_bucket calls `buckets` rewrites are other expressions altogether; so a client would
see other names for the same question, bounded or not. `keep` gives each projection of the
outermost SELECT that has no alias the name DuckDB gives it in the original text, taken from
DuckDB's own parser (`json_serialize_sql`, which parses without binding).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import duckdb
from sqlglot import exp

from warehouse.kernel import scratch


def keep(original: str, tree: exp.Expr) -> None:
    """Alias, in place, the projections of `tree`'s outermost SELECT that have none by the
    names DuckDB gives them in `original`; nothing when the two do not line up."""
    select = _outermost(tree)
    if select is None:
        return
    names, now = names_of(original), names_of(tree.sql(dialect="duckdb"))
    projections = select.expressions
    if names is None or now is None or not len(names) == len(now) == len(projections):
        return
    for projection, name, given in zip(list(projections), names, now, strict=True):
        if name is None or name == given or isinstance(projection, exp.Alias | exp.Star):
            continue  # only a name the rewrite changed
        if isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
            continue
        projection.replace(exp.alias_(projection.copy(), name, quoted=True))


def _outermost(tree: exp.Expr) -> exp.Select | None:
    while isinstance(tree, exp.SetOperation):
        tree = tree.this
    return tree if isinstance(tree, exp.Select) else None


@lru_cache(maxsize=512)
def names_of(sql: str) -> tuple[str | None, ...] | None:
    """The name DuckDB gives each projection of `sql`'s outermost SELECT (None for one with
    an alias or a star), or None when DuckDB's parser does not take `sql` as one SELECT."""
    con = scratch.cursor()
    try:
        parsed = json.loads(_one(con, "SELECT json_serialize_sql($1)", sql))
        empty = json.loads(_one(con, "SELECT json_serialize_sql($1)", "SELECT 1"))
    except (duckdb.Error, TypeError):
        return None
    if parsed.get("error") or len(parsed.get("statements", [])) != 1:
        return None
    node = parsed["statements"][0]["node"]
    while isinstance(node, dict) and node.get("type") == "SET_OPERATION_NODE":
        node = node.get("left") or (node.get("children") or [None])[0]
    if not isinstance(node, dict) or node.get("type") != "SELECT_NODE":
        return None
    return tuple(_name(con, empty, e) for e in node["select_list"])


def _name(
    con: duckdb.DuckDBPyConnection, empty: dict[str, Any], expr: dict[str, Any]
) -> str | None:
    if expr.get("alias") or expr.get("class") in ("STAR", "COLUMNS"):
        return None
    if expr.get("class") == "COLUMN_REF":  # `g.model` is named `model`
        return str(expr["column_names"][-1])
    statement = empty["statements"][0]
    alone = {
        **empty,
        "statements": [{**statement, "node": {**statement["node"], "select_list": [expr]}}],
    }
    try:
        text = _one(con, "SELECT json_deserialize_sql($1::JSON)", json.dumps(alone))
    except (duckdb.Error, TypeError):
        return None
    return str(text).removeprefix("SELECT ")


def _one(con: duckdb.DuckDBPyConnection, sql: str, value: str) -> Any:
    row = con.execute(sql, [value]).fetchone()
    if row is None:
        raise TypeError(f"no row from {sql}")
    return row[0]
