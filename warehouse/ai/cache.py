"""Answers of registered models, kept so that a row is never sent twice.

Keyed by model, model version (`wanka.ai_models.version`: an admin changes it when the served
weights change) and the SHA-256 of what was asked (the task, its parameters and the text). Kept
in `wanka.ai_cache`, written as each batch's answers arrive on a cursor of its own, and in this
process's memory in front of it, so that a hit costs a dictionary lookup. A read-only file
keeps new answers in memory only. Errors are never kept: the next query asks again.
"""

from __future__ import annotations

import hashlib
import json
import threading

import duckdb

#: Answers kept in memory per process (each a text); past it the oldest half is dropped.
MEMORY_ROWS = 1_000_000


def input_sha256(task: str, extra: str, text: str) -> str:
    """The cache key of one request.

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
        self._memory: dict[tuple[str, str, str], str] = {}

    def get(self, model: str, version: str, keys: list[str]) -> dict[str, str]:
        """The answers known for `keys`: memory first, then the table."""
        found: dict[str, str] = {}
        missing: list[str] = []
        memory = self._memory
        for key in keys:
            hit = memory.get((model, version, key))
            if hit is None:
                missing.append(key)
            else:
                found[key] = hit
        if missing:
            with self._lock:
                rows = self._cur.execute(
                    "SELECT input_sha256, output FROM wanka.ai_cache WHERE model = ? "
                    "AND model_version = ? AND input_sha256 IN (SELECT unnest(?::VARCHAR[]))",
                    [model, version, missing],
                ).fetchall()
            for key, output in rows:
                found[key] = output
                memory[(model, version, key)] = output
        return found

    def put(self, model: str, version: str, answers: dict[str, str]) -> None:
        """Keep new answers (a key already kept stays as it was)."""
        if not answers:
            return
        with self._lock:
            if len(self._memory) + len(answers) > MEMORY_ROWS:
                for old in list(self._memory)[: len(self._memory) // 2]:
                    del self._memory[old]
            for key, output in answers.items():
                self._memory[(model, version, key)] = output
            if self._writable:
                self._cur.execute(
                    "INSERT OR IGNORE INTO wanka.ai_cache (model, model_version, input_sha256, "
                    "output) SELECT ?, ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[])",
                    [model, version, list(answers), list(answers.values())],
                )

    def forget_memory(self) -> None:
        """Drop the memory (the table stays): what a new process would see."""
        with self._lock:
            self._memory.clear()
