"""Binds the AI functions' Python bodies on a connection; the SQL names are macros of 0024.

`sql/schema/0024_ai_functions.sql` defines what users call (`ai_embed`, `ai_similarity`,
`ai_classify`, `ai_gen`, `ai_extract`, `ai_summarize`, `ai_agg` and the `_detail` forms) as
macros with Hologres's and Snowflake's names and argument order, overloaded by argument count.
They call the bodies bound here, whose names start with `wanka_ai_` (user SQL may not call
those: `warehouse.ai.grants`).

Bodies are made once per process and kept for its life: DuckDB keeps a body alive only as long
as the connection object it was bound on, while that connection's cursors may still call it
(the same reason as `udfs.registry._body`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import weakref
from collections.abc import Callable
from typing import Any, cast

import duckdb
from duckdb.func import FunctionNullHandling, PythonUDFType

from warehouse.ai import local, remote

#: (name, body, parameter types, return type) of the bodies that need only the embedded model.
LOCAL: tuple[tuple[str, Callable[..., Any], list[str], str], ...] = (
    ("wanka_ai_embed_local", local.embed_body, ["VARCHAR"], local.VECTOR),
    (
        "wanka_ai_classify_local",
        local.classify_body,
        ["VARCHAR", "VARCHAR[]", f"{local.EXAMPLE}[]"],
        "VARCHAR",
    ),
)
#: The SQL functions users call, as defined in 0024 (the planner treats them as deterministic).
SQL_NAMES = frozenset(
    {
        "ai_embed",
        "ai_similarity",
        "ai_classify",
        "ai_gen",
        "ai_extract",
        "ai_summarize",
        "ai_agg",
        "ai_gen_detail",
        "ai_extract_detail",
        "ai_summarize_detail",
        "wanka_ai_vector",
        "wanka_ai_json_text",
        "wanka_ai_detail",
    }
)


def bind(
    con: duckdb.DuckDBPyConnection,
    name: str,
    body: Callable[..., Any],
    params: list[str],
    returns: str,
) -> None:
    """Bind one Arrow body, replacing an earlier binding of the name on `con`."""
    with contextlib.suppress(duckdb.InvalidInputException):
        con.remove_function(name)
    con.create_function(
        name,
        body,
        cast(Any, params),
        cast(Any, returns),
        type=PythonUDFType.ARROW,
        null_handling=FunctionNullHandling.SPECIAL,
        side_effects=False,
    )


#: The bodies over each database's runtime, kept for the process's life (see above); each
#: holds its runtime weakly, so a closed database's runtime goes with its Engine.
_KEPT: list[Callable[..., Any]] = []


def _weakly(
    make: Callable[[remote.Runtime], Callable[..., Any]], runtime: remote.Runtime
) -> Callable[..., Any]:
    held = weakref.ref(runtime)

    def body(*columns: Any) -> Any:
        alive = held()
        if alive is None:
            raise remote.CallRaised("this database is closed: its AI functions cannot run")
        return make(alive)(*columns)

    body.__signature__ = inspect.signature(make(runtime))  # type: ignore[attr-defined]
    _KEPT.append(body)
    return body


#: The bodies that call registered models: name, parameter types, return type.
REMOTE = (
    (
        "wanka_ai_call",
        ["VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "UBIGINT"],
        "VARCHAR",
    ),
    ("wanka_ai_embed_model", ["VARCHAR", "VARCHAR", "VARCHAR", "UBIGINT"], "FLOAT[]"),
)


def register(con: duckdb.DuckDBPyConnection, *, read_only: bool = False) -> remote.Runtime:
    """Bind every AI body on `con` (and so its cursors); returns the runtime to close with it."""
    for name, body, params, returns in LOCAL:
        bind(con, name, body, params, returns)
    runtime = remote.Runtime(con, read_only=read_only)
    makers = {"wanka_ai_call": remote.call_body, "wanka_ai_embed_model": remote.embed_body}
    for name, params, returns in REMOTE:
        bind(con, name, _weakly(makers[name], runtime), params, returns)
    return runtime


def _not_here(*columns: Any) -> Any:
    raise remote.CallRaised(
        "this connection was not opened by wanka's Engine, so it cannot call a registered "
        "model (the embedded one works)"
    )


def ensure_bound(con: duckdb.DuckDBPyConnection) -> None:
    """On a connection an Engine did not open (a schema made in memory), bind what the macros
    of step 0024 need to be created: the embedded model's bodies, and bodies that say a
    registered model cannot be called from here. A connection already bound is left alone."""
    found = con.execute(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'wanka_ai_call'"
    ).fetchall()[0][0]
    if found:
        return
    for name, body, params, returns in LOCAL:
        bind(con, name, body, params, returns)
    for name, params, returns in REMOTE:
        signature = inspect.Signature(
            [
                inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY)
                for i in range(len(params))
            ]
        )
        body = functools.partial(_not_here)
        body.__signature__ = signature  # type: ignore[attr-defined]
        bind(con, name, body, params, returns)
