"""Answers of registered models, kept so that a row is never sent twice.

Keyed by model, model version (`wanka.ai_models.version`: an admin changes it when the served
weights change) and the SHA-256 of what was asked (the task, its parameters and the text). Kept
in `wanka.ai_cache`, written as each batch's answers arrive on a cursor of its own, and in this
process's memory in front of it, by the text itself, so that a hit costs one dictionary lookup
and no hashing (`memory`). A read-only file keeps new answers in memory only. Errors are never
kept: the next query asks again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading

import duckdb

log = logging.getLogger(__name__)

#: Answers kept in memory per process; past it the memory is emptied (the table keeps them).
MEMORY_ROWS = 2_000_000
#: What one memory holds: the answers of one (model, version, task, parameters), by text.
Scope = tuple[str, str, str, str]


def input_sha256(task: str, extra: str, text: str) -> str:
    """The cache key of one request in `wanka.ai_cache`.

    >>> input_sha256("gen", "{}", "hi") != input_sha256("summarize", "{}", "hi")
    True
    """
    return hashlib.sha256(json.dumps([task, extra, text]).encode()).hexdigest()


class Cache:
    """The persistent cache of one database, with a memory in front."""

    def __init__(self, cur: duckdb.DuckDBPyConnection, *, writable: bool) -> None:
        self._cur = cur
        self._writable = writable
        self._lock = threading.Lock()
        self._memory: dict[Scope, dict[str, str]] = {}
        self._rows = 0

    def memory(self, scope: Scope) -> dict[str, str]:
        """The answers in memory for one scope, by text (read it; `get` and `put` fill it)."""
        found = self._memory.get(scope)
        if found is None:
            found = self._memory.setdefault(scope, {})
        return found

    def get(self, scope: Scope, texts: list[str]) -> dict[str, str]:
        """The answers known for `texts`: memory first, then the table."""
        memory = self.memory(scope)
        found = {t: memory[t] for t in texts if t in memory}
        missing = [t for t in texts if t not in found]
        if missing:
            model, version, task, extra = scope
            keys = {input_sha256(task, extra, t): t for t in missing}
            with self._lock:
                rows = self._cur.execute(
                    "SELECT input_sha256, output FROM wanka.ai_cache WHERE model = ? "
                    "AND model_version = ? AND input_sha256 IN (SELECT unnest(?::VARCHAR[]))",
                    [model, version, list(keys)],
                ).fetchall()
            loaded = {keys[key]: output for key, output in rows}
            self._remember(scope, loaded)
            found.update(loaded)
        return found

    def put(self, scope: Scope, answers: dict[str, str]) -> None:
        """Keep new answers (a key already kept stays as it was)."""
        if not answers:
            return
        self._remember(scope, answers)
        if self._writable:
            model, version, task, extra = scope
            with self._lock:
                try:
                    self._cur.execute(
                        "INSERT OR IGNORE INTO wanka.ai_cache (model, model_version, "
                        "input_sha256, output) SELECT ?, ?, unnest(?::VARCHAR[]), "
                        "unnest(?::VARCHAR[])",
                        [
                            model,
                            version,
                            [input_sha256(task, extra, t) for t in answers],
                            list(answers.values()),
                        ],
                    )
                except duckdb.Error as error:
                    # another query kept the same answer at the same moment (a write-write
                    # conflict), or the file is being closed: the answer stands, the memory
                    # keeps it, and the row is asked again only in a new process
                    log.warning(
                        "ai cache: %d answers of %s not stored: %s", len(answers), model, error
                    )

    def _remember(self, scope: Scope, answers: dict[str, str]) -> None:
        with self._lock:
            if self._rows + len(answers) > MEMORY_ROWS:
                self._memory.clear()
                self._rows = 0
            self._rows += len(answers)
        self.memory(scope).update(answers)

    def forget_memory(self) -> None:
        """Drop the memory (the table stays): what a new process would see."""
        with self._lock:
            self._memory.clear()
            self._rows = 0
