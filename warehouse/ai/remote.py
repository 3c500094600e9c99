"""The bodies of the functions that call registered models, and the state they share per database.

`wanka_ai_call(task, model, text, extra, on_error, txid) -> VARCHAR` serves ai_gen,
ai_summarize, ai_extract and ai_agg (their macros in sql/schema/0024_ai_functions.sql);
`wanka_ai_embed_model(model, text, on_error, txid) -> FLOAT[]` serves ai_embed(text, model).
For each batch: the model is looked up in `wanka.ai_models` (an unregistered one is an error
whatever `on_error` says), the distinct texts are cut to its `context_chars`, those the cache
knows are answered from it, the others are charged to the query's budget and sent, at most
`concurrency` at once, each retried as `client` says. A row whose request failed gives NULL
(`on_error = 'null'`), stops the query (`'raise'`), or gives `{"value", "error", "note"}` as
JSON (`'detail'`, which the `_detail` macros turn into a STRUCT).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.ai import cache, calls, client, embedded, models, tasks
from warehouse.ai.arrow_rows import combined
from warehouse.errors import UserError

log = logging.getLogger(__name__)
ON_ERROR = ("null", "raise", "detail")
#: Texts per embeddings request.
EMBED_BATCH = 64


class CallRaised(UserError):
    """A failed request in a query that asked for on_error => 'raise'."""


@dataclass
class Outcome:
    value: str | None = None
    error: str | None = None


class Runtime:
    """What the model functions of one open database share: its models, cache and budgets."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, read_only: bool) -> None:
        catalog = con.execute("SELECT current_database()").fetchall()[0][0]
        self._cur = con.cursor()
        self._cur.execute(f'USE "{catalog}"')
        cache_cur = con.cursor()
        cache_cur.execute(f'USE "{catalog}"')
        self._lock = threading.Lock()
        self._specs: dict[tuple[int, str, str], tuple[models.ModelSpec, frozenset[str]]] = {}
        self.cache = cache.Cache(cache_cur, writable=not read_only)
        self.budgets = calls.Budgets()
        self._cursors = (self._cur, cache_cur)

    def spec(self, name: str, task: str, txid: int) -> tuple[models.ModelSpec, frozenset[str]]:
        """The registered model and every registered endpoint (the allow-list), read once per
        query (transaction): a query sees one registration throughout."""
        key = (txid, name, task)
        with self._lock:
            found = self._specs.get(key)
            if found is None:
                if len(self._specs) > 256:
                    self._specs.clear()
                found = models.find(self._cur, name, task), models.endpoints(self._cur)
                self._specs[key] = found
            return found

    def close(self) -> None:
        for cur in self._cursors:
            cur.close()


def _check_on_error(mode: str) -> str:
    if mode not in ON_ERROR:
        raise UserError(f"on_error must be one of {', '.join(ON_ERROR)}, not {mode!r}")
    return mode


def _rows_by_call(*columns: pa.Array) -> dict[tuple[object, ...], list[int]]:
    """Row numbers grouped by the values of the per-call columns (one group in practice)."""
    if all(len(pc.unique(c)) == 1 for c in columns):
        return {tuple(c[0].as_py() for c in columns): list(range(len(columns[0])))}
    groups: dict[tuple[object, ...], list[int]] = {}
    for row, key in enumerate(zip(*(c.to_pylist() for c in columns), strict=True)):
        groups.setdefault(key, []).append(row)
    return groups


def _ask(
    runtime: Runtime,
    function: str,
    spec: models.ModelSpec,
    texts: list[str],
    extra: str,
    txid: int,
    send: Callable[[list[str]], list[Outcome]],
    task: str,
) -> dict[str, Outcome]:
    """Answers for distinct `texts`: the cache's, then `send` for the rest (charged first)."""
    scope = (spec.name, spec.version, task, extra)
    known = runtime.cache.get(scope, texts)
    out = {t: Outcome(value=v) for t, v in known.items()}
    missing = [t for t in texts if t not in out]
    if missing:
        runtime.budgets.charge(txid, spec, len(missing), function)
        fresh = send(missing)
        out.update(zip(missing, fresh, strict=True))
        runtime.cache.put(
            scope, {t: o.value for t, o in zip(missing, fresh, strict=True) if o.value is not None}
        )
    return out


def _finish(outcome: Outcome | None, mode: str, note: str | None, function: str) -> str | None:
    if outcome is None:
        return (
            json.dumps({"value": None, "error": None, "note": None}) if mode == "detail" else None
        )
    if outcome.error is not None and mode == "raise":
        raise CallRaised(f"{function}: {outcome.error}")
    if mode == "detail":
        return json.dumps({"value": outcome.value, "error": outcome.error, "note": note})
    return outcome.value


def _send_chat(
    spec: models.ModelSpec,
    allowed: frozenset[str],
    key: str | None,
    task: str,
    extra: str,
    batch: list[str],
) -> list[Outcome]:
    def one(text: str) -> Outcome:
        body = tasks.request(task, spec.model, text, extra)
        try:
            try:
                answer = client.post(spec, "chat/completions", body, allowed, key)
            except client.CallFailed as error:
                older = tasks.older_json_form(body)
                if older is None or "response_format" not in str(error):
                    raise
                answer = client.post(spec, "chat/completions", older, allowed, key)
            return Outcome(value=tasks.answer(task, client.chat_text(answer, spec)))
        except client.CallFailed as error:
            return Outcome(error=str(error))

    return calls.each(spec, batch, one)


def _chat_rows(
    runtime: Runtime,
    texts: list[str | None],
    task: str,
    model: str,
    extra: str,
    mode: str,
    txid: int,
) -> list[str | None]:
    """One group's answers (rows that share task, model, parameters, on_error, transaction)."""
    function = f"ai_{task}"
    mode = _check_on_error(mode)
    spec, allowed = runtime.spec(model, "chat", txid)
    tasks.request(task, spec.model, "", extra)  # bad params or a bad schema stop here
    cut: list[tuple[str, str | None] | None] = []
    for text in texts:
        if text is None:
            cut.append(None)
            continue
        note = None
        if len(text) > spec.context_chars:
            note = f"text cut from {len(text)} to {spec.context_chars} characters"
            log.warning("%s: a row's %s (model %s)", function, note, spec.name)
        cut.append((text[: spec.context_chars], note))
    send = functools.partial(_send_chat, spec, allowed, models.api_key(spec), task, extra)
    distinct = list(dict.fromkeys(c[0] for c in cut if c is not None))
    answers = _ask(runtime, function, spec, distinct, extra, txid, send, task)
    return [
        _finish(None, mode, None, function)
        if c is None
        else _finish(answers[c[0]], mode, c[1], function)
        for c in cut
    ]


def _all_in_memory(runtime: Runtime, values: list[str | None], *calls: pa.Array) -> pa.Array | None:
    """The batch's answers when every row's is in memory (one call, 'null' or 'raise'), else None.

    The common case of a repeated query or a refresh: a dictionary lookup per row, no hashing.
    """
    task, model, extra, on_error, txid = calls
    if not all(len(pc.unique(c)) == 1 for c in calls) or on_error[0].as_py() not in (
        "null",
        "raise",
    ):
        return None
    spec, _ = runtime.spec(str(model[0].as_py() or ""), "chat", int(txid[0].as_py()))
    scope = (spec.name, spec.version, str(task[0].as_py()), str(extra[0].as_py() or ""))
    memory = runtime.cache.memory(scope)
    found = [None if v is None else memory.get(v) for v in values]
    if any(f is None and v is not None for f, v in zip(found, values, strict=True)):
        return None
    return pa.array(found, pa.string())


def call_body(runtime: Runtime) -> Callable[..., pa.Array]:
    """`wanka_ai_call`'s body over one database's runtime."""

    def wanka_ai_call(*given: pa.Array | pa.ChunkedArray) -> pa.Array:
        task, model, text, extra, on_error, txid = (combined(c) for c in given)
        values = text.to_pylist()
        hits = _all_in_memory(runtime, values, task, model, extra, on_error, txid)
        if hits is not None:
            return hits
        out: list[str | None] = [None] * len(values)
        for (t, m, x, mode, tx), rows in _rows_by_call(task, model, extra, on_error, txid).items():
            answers = _chat_rows(
                runtime,
                [values[r] for r in rows],
                str(t),
                str(m or ""),
                str(x or ""),
                str(mode),
                int(str(tx)),
            )
            for r, answer in zip(rows, answers, strict=True):
                out[r] = answer
        return pa.array(out, pa.string())

    wanka_ai_call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in _CALL_PARAMS]
    )
    return wanka_ai_call


_CALL_PARAMS = ("task", "model", "text", "extra", "on_error", "txid")
_EMBED_PARAMS = ("model", "text", "on_error", "txid")


def _send_embed(
    spec: models.ModelSpec, allowed: frozenset[str], key: str | None, batch: list[str]
) -> list[Outcome]:
    chunks = [batch[i : i + EMBED_BATCH] for i in range(0, len(batch), EMBED_BATCH)]

    def one(chunk: list[str]) -> list[Outcome]:
        try:
            body = {"model": spec.model, "input": chunk}
            answer = client.post(spec, "embeddings", body, allowed, key)
            found = client.embedding_vectors(answer, spec, len(chunk))
            return [Outcome(value=json.dumps(v)) for v in found]
        except client.CallFailed as error:
            return [Outcome(error=str(error))] * len(chunk)

    return [o for part in calls.each(spec, chunks, one) for o in part]


def _embed_rows(
    runtime: Runtime, texts: list[str | None], model: str, mode: str, txid: int
) -> list[list[float] | None]:
    mode = _check_on_error(mode)
    present = [t for t in texts if t is not None]
    if model == embedded.NAME:
        vectors = iter(embedded.embed(present).tolist())
        return [None if t is None else next(vectors) for t in texts]
    spec, allowed = runtime.spec(model, "embed", txid)
    send = functools.partial(_send_embed, spec, allowed, models.api_key(spec))
    distinct = list(dict.fromkeys(t[: spec.context_chars] for t in present))
    answers = _ask(runtime, "ai_embed", spec, distinct, "", txid, send, "embed")
    out: list[list[float] | None] = []
    for text in texts:
        found = None if text is None else answers[text[: spec.context_chars]]
        if found is not None and found.error is not None and mode == "raise":
            raise CallRaised(f"ai_embed: {found.error}")
        out.append(None if found is None or found.value is None else json.loads(found.value))
    return out


def embed_body(runtime: Runtime) -> Callable[..., pa.Array]:
    """`wanka_ai_embed_model`'s body: wordllama here, or a registered embeddings endpoint."""

    def wanka_ai_embed_model(*given: pa.Array | pa.ChunkedArray) -> pa.Array:
        model, text, on_error, txid = (combined(c) for c in given)
        values = text.to_pylist()
        out: list[list[float] | None] = [None] * len(values)
        for (m, mode, tx), rows in _rows_by_call(model, on_error, txid).items():
            found = _embed_rows(runtime, [values[r] for r in rows], str(m), str(mode), int(str(tx)))
            for r, vector in zip(rows, found, strict=True):
                out[r] = vector
        return pa.array(out, pa.list_(pa.float32()))

    wanka_ai_embed_model.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in _EMBED_PARAMS]
    )
    return wanka_ai_embed_model
