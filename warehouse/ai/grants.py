"""Which models a statement names, and whether the caller's role may call them.

Decided on the statement's parse (`warehouse.parsing.reads`: each call's positional string
constants), before anything runs, by `warehouse.security.policy`. A reader may call the
embedded model and the registered models granted to the role `reader` in `wanka.ai_grants`;
a reader must name the model as a string literal (a model from a column or a parameter cannot
be checked, so it is refused). Writers and admins may call every registered model. The bodies
the macros call (`wanka_ai_*`) are never callable from user SQL.
"""

from __future__ import annotations

from collections.abc import Iterable

import duckdb

from warehouse.ai import embedded

#: AI function -> position of its model argument (0-based), for the forms that take one.
MODEL_ARGUMENT = {
    "ai_embed": 1,
    "ai_similarity": 2,
    "ai_gen": 1,
    "ai_gen_detail": 1,
    "ai_extract": 2,
    "ai_extract_detail": 2,
    "ai_summarize": 1,
    "ai_summarize_detail": 1,
    "ai_agg": 2,
}
#: Functions whose form without a model argument uses the default chat model.
DEFAULT_CHAT = frozenset({"ai_gen", "ai_extract", "ai_summarize", "ai_agg"})
INTERNAL_PREFIX = "wanka_ai_"


def internal_call(functions: Iterable[str]) -> str | None:
    """Why a statement is refused for calling a body directly, or None.

    >>> internal_call(["ai_gen", "WANKA_AI_CALL"])
    'wanka_ai_call() is internal to the AI functions: call ai_gen, ai_embed, ... instead'
    """
    for name in functions:
        if name.lower().startswith(INTERNAL_PREFIX):
            return (
                f"{name.lower()}() is internal to the AI functions: call ai_gen, ai_embed, ... "
                "instead"
            )
    return None


def named_models(
    calls: Iterable[tuple[str, tuple[str | None, ...]]],
) -> tuple[set[str], str | None]:
    """The models the calls name ('' for the default chat model), or why they cannot be told.

    >>> named_models([("ai_gen", (None, "llama")), ("ai_embed", (None,))])
    ({'llama'}, None)
    >>> named_models([("ai_gen", (None, None))])[1]
    'ai_gen() must name its model as a string literal for a reader'
    """
    found: set[str] = set()
    for name, arguments in calls:
        function = name.lower()
        position = MODEL_ARGUMENT.get(function)
        if position is None:
            continue
        if len(arguments) > position:
            model = arguments[position]
            if model is None:
                return found, f"{function}() must name its model as a string literal for a reader"
            found.add(model)
        elif function in DEFAULT_CHAT:
            found.add("")
    return found, None


def refusal(
    cur: duckdb.DuckDBPyConnection, role: str, calls: Iterable[tuple[str, tuple[str | None, ...]]]
) -> str | None:
    """Why `role` may not call the models these calls name, or None when it may."""
    if role != "reader":
        return None
    models, unknown = named_models(calls)
    if unknown:
        return unknown
    for model in sorted(models - {embedded.NAME}):
        if model == "":
            rows = cur.execute(
                "SELECT name FROM wanka.ai_models WHERE is_default AND task = 'chat' "
                "ORDER BY name LIMIT 1"
            ).fetchall()
            if not rows:
                continue  # the call itself says there is no default model
            model = str(rows[0][0])
        granted = cur.execute(
            "SELECT count(*) FROM wanka.ai_grants WHERE model = ? AND role = 'reader'", [model]
        ).fetchall()[0][0]
        if not granted:
            return (
                f"model {model!r} is not granted to readers: an admin may "
                f"INSERT INTO wanka.ai_grants VALUES ('{model}', 'reader')"
            )
    return None
