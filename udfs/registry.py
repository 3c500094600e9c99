"""Binds the model functions of `udfs/` into a DuckDB connection.

This is the only module of `udfs/` that imports duckdb. Every `Model` defined in the modules
below becomes a persistent SQL macro in schema `main`, compiled from its one Python definition
(`Model.sql_body`). Why macros: DuckDB inlines them into the plan, so a model function costs
what the same formula typed by hand costs and folds to a constant for constant arguments,
where a vectorised Python UDF is ~20× slower. Why persistent: TEMP macros are invisible to
other cursors of the same connection, and the engine hands out cursors.

Each macro carries a comment with a digest of its definition, so an open that finds them all
current writes nothing to the catalog. On a read-only file that lacks a macro, the function is
bound instead as a vectorised Python (Arrow) UDF with the same semantics.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from collections.abc import Callable
from typing import Any, cast

import duckdb
import pyarrow as pa
from duckdb.func import FunctionNullHandling, PythonUDFType

from udfs import bandwidth, checkpoint, collectives, energy, reliability, scheduling, training
from udfs.expr import sql_of
from udfs.model import Model

MODULES = (bandwidth, collectives, checkpoint, energy, reliability, scheduling, training)
SCHEMA = "main"
#: Comments of wanka's macros start with this; a macro so tagged but no longer defined is dropped.
TAG = "wanka model"

_ARROW_PARAM_TYPES = {"INTEGER": "DOUBLE"}

log = logging.getLogger(__name__)


def _collect() -> tuple[Model[..., Any], ...]:
    found: dict[str, Model[..., Any]] = {}
    for module in MODULES:
        for value in vars(module).values():
            if isinstance(value, Model) and value.__module__ == module.__name__:
                if value.name in found:
                    raise RuntimeError(f"two model functions named {value.name}")
                found[value.name] = value
    return tuple(found.values())


#: Every model function wanka registers, in documentation order.
REGISTRY: tuple[Model[..., Any], ...] = _collect()
#: Names a dynamic-table planner may treat as deterministic (all of them, today).
DETERMINISTIC = frozenset(m.name for m in REGISTRY if m.deterministic)


def macro_sql(model: Model[..., Any]) -> str:
    """`CREATE OR REPLACE MACRO main.name(args) AS <body>` for one model."""
    return f"CREATE OR REPLACE MACRO {SCHEMA}.{model.name}({', '.join(model.params)}) AS\n" + (
        model.sql_body()
    )


def macro_comment(model: Model[..., Any]) -> str:
    """The comment stored with the macro: what it is, plus a digest of its definition."""
    digest = hashlib.sha256(macro_sql(model).encode()).hexdigest()[:16]
    return f"{TAG} {digest}: {model.signature} -> {model.returns}. {model.meaning}"


def installed(con: duckdb.DuckDBPyConnection) -> dict[str, str | None]:
    """The macros in schema `main` of the current database, with their comments."""
    rows = con.execute(
        "SELECT function_name, comment FROM duckdb_functions() "
        "WHERE database_name = current_database() AND schema_name = ? "
        "AND function_type = 'macro'",
        [SCHEMA],
    ).fetchall()
    return {name: comment for name, comment in rows}


def _read_only(con: duckdb.DuckDBPyConnection) -> bool:
    mode = con.execute("SELECT current_setting('access_mode')").fetchall()[0][0]
    return str(mode).lower() == "read_only"


def register(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Make every model function callable on `con` (and its cursors); returns their names.

    Read-write: create or replace the macros whose definition changed, drop wanka macros no
    longer defined, all in one transaction, and nothing when all are current. Read-only: use
    the macros stored in the file; bind any that are missing as Arrow UDFs. A model declared
    non-deterministic is always an Arrow UDF with side effects, so that DuckDB never folds it.
    """
    macros = [m for m in REGISTRY if m.deterministic]
    for model in REGISTRY:
        if not model.deterministic:
            _bind_arrow(con, model)
    present = installed(con)
    if _read_only(con):
        for model in macros:
            if model.name not in present:
                _bind_arrow(con, model)
            elif present[model.name] != macro_comment(model):
                log.warning("%s in this read-only file is an older definition", model.name)
        return [m.name for m in REGISTRY]
    changed = [m for m in macros if present.get(m.name) != macro_comment(m)]
    wanted = {m.name for m in macros}
    obsolete = [
        name
        for name, comment in present.items()
        if name not in wanted and (comment or "").startswith(TAG)
    ]
    if changed or obsolete:
        con.execute("BEGIN TRANSACTION")
        try:
            for model in changed:
                con.execute(macro_sql(model))
                comment = sql_of(macro_comment(model))
                con.execute(f"COMMENT ON MACRO {SCHEMA}.{model.name} IS {comment}")
            for name in obsolete:
                con.execute(f"DROP MACRO IF EXISTS {SCHEMA}.{name}")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return [m.name for m in REGISTRY]


def arrow_function(model: Model[..., Any]) -> Callable[..., pa.Array]:
    """The model as a DuckDB Arrow UDF body (also what a Spark `arrow_udf` would wrap)."""

    def apply(*columns: pa.Array | pa.ChunkedArray) -> pa.Array:
        arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
        return model.arrow(*arrays)

    apply.__name__ = model.name
    # DuckDB counts the arguments from the signature, which *columns would hide
    apply.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY) for name in model.params]
    )
    return apply


#: Each model's Arrow body, made once (by the model's identity): DuckDB keeps a body alive only
#: as long as the connection object it was bound on, while that connection's cursors may still
#: call it (tests/warehouse/kernel/test_blocks.py shows the crash).
_BODIES: dict[int, tuple[Model[..., Any], Callable[..., pa.Array]]] = {}


def _body(model: Model[..., Any]) -> Callable[..., pa.Array]:
    kept = _BODIES.get(id(model))
    if kept is None or kept[0] is not model:
        kept = _BODIES[id(model)] = (model, arrow_function(model))
    return kept[1]


def _bind_arrow(con: duckdb.DuckDBPyConnection, model: Model[..., Any]) -> None:
    # counts are declared DOUBLE so that any numeric argument binds, as with the macro;
    # Model.numpy refuses a fractional count just as the macro does
    types: list[str] = [_ARROW_PARAM_TYPES.get(p.type, p.type) for p in model.params.values()]
    con.create_function(
        model.name,
        _body(model),
        cast(Any, types),
        cast(Any, model.returns),
        type=PythonUDFType.ARROW,
        null_handling=FunctionNullHandling.SPECIAL,
        side_effects=not model.deterministic,
    )
