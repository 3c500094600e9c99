"""The models SQL may call: the embedded one, and the endpoints an admin registered.

A registered model is a row of `wanka.ai_models` (sql/schema/0024_ai_functions.sql): an
OpenAI-compatible API's base URL, the model's name there, where its key is read from, and its
limits. The key itself is never stored, logged or put in an error: `api_key` reads it from the
named environment variable or file when a request is made, and errors name only the variable
or the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from warehouse.ai import embedded
from warehouse.errors import UserError

_COLUMNS = (
    "name, task, endpoint, model, key_env, key_file, timeout_s, concurrency, call_budget, "
    "context_chars, version, is_default"
)


class ModelError(UserError):
    """A model that cannot be called: unregistered, of the wrong task, its key missing."""


@dataclass(frozen=True)
class ModelSpec:
    """One row of `wanka.ai_models`."""

    name: str
    task: str  # 'chat' or 'embed'
    endpoint: str  # base URL, no trailing slash
    model: str
    key_env: str | None = None
    key_file: str | None = None
    timeout_s: float = 60.0
    concurrency: int = 4
    call_budget: int = 10_000
    context_chars: int = 16_000
    version: str = "1"
    is_default: bool = False

    def url(self, path: str) -> str:
        """The URL of one API path under the endpoint.

        >>> ModelSpec("m", "chat", "http://10.0.0.7:8000/v1/", "x").url("chat/completions")
        'http://10.0.0.7:8000/v1/chat/completions'
        """
        return f"{self.endpoint.rstrip('/')}/{path}"


def _spec(row: tuple[object, ...]) -> ModelSpec:
    name, task, endpoint, model, key_env, key_file, timeout_s, conc, budget, ctx, ver, dflt = row
    return ModelSpec(
        str(name),
        str(task),
        str(endpoint).rstrip("/"),
        str(model),
        None if key_env is None else str(key_env),
        None if key_file is None else str(key_file),
        float(str(timeout_s)),
        int(str(conc)),
        int(str(budget)),
        int(str(ctx)),
        str(ver),
        bool(dflt),
    )


def find(cur: duckdb.DuckDBPyConnection, name: str, task: str) -> ModelSpec:
    """The registered model `name` for `task`; '' is the default chat model."""
    if name == embedded.NAME:
        raise ModelError(
            f"model {embedded.NAME} is the embedded embedding model: ai_embed, ai_similarity "
            "and ai_classify use it; generating text needs a chat model in wanka.ai_models"
        )
    if name:
        rows = cur.execute(f"SELECT {_COLUMNS} FROM wanka.ai_models WHERE name = ?", [name])
    else:
        rows = cur.execute(
            f"SELECT {_COLUMNS} FROM wanka.ai_models WHERE is_default AND task = ? "
            "ORDER BY name LIMIT 1",
            [task],
        )
    found = rows.fetchall()
    if not found:
        if not name:
            raise ModelError(
                f"no default {task} model: name one, or have an admin register one in "
                "wanka.ai_models with is_default = true"
            )
        raise ModelError(
            f"model {name!r} is not registered: an admin adds it to wanka.ai_models "
            "(name, task, endpoint, model, ...); see docs/ai.md"
        )
    spec = _spec(found[0])
    if spec.task != task:
        raise ModelError(f"model {spec.name!r} is a {spec.task} model, not a {task} model")
    return spec


def endpoints(cur: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The base URLs of every registered model: the only places a request may go."""
    rows = cur.execute("SELECT DISTINCT endpoint FROM wanka.ai_models").fetchall()
    return frozenset(str(r[0]).rstrip("/") for r in rows)


def api_key(spec: ModelSpec) -> str | None:
    """The model's key, read now from its environment variable or file; None when it has none.

    Errors name where the key should be, never a key.
    """
    if spec.key_env:
        value = os.environ.get(spec.key_env, "").strip()
        if not value:
            raise ModelError(f"model {spec.name!r}: environment variable {spec.key_env} is unset")
        return value
    if spec.key_file:
        try:
            value = Path(spec.key_file).read_text().strip()
        except OSError as error:
            raise ModelError(
                f"model {spec.name!r}: cannot read its key file {spec.key_file} ({error.strerror})"
            ) from None
        if not value:
            raise ModelError(f"model {spec.name!r}: its key file {spec.key_file} is empty")
        return value
    return None
