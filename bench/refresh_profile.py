"""Where one incremental refresh spends its time, statement by statement (the wall clock of each
`execute`, not DuckDB's own timings)."""

from __future__ import annotations

import time

import duckdb
from dynamic_common import Appends  # bench/ is the script's folder on sys.path

from warehouse.kernel.engine import Engine


def profile(
    engine: Engine, appender: Appends, base: int, names: tuple[str, ...] = ("gpu_hourly_host",)
) -> list[str]:
    """One incremental refresh of `names` at 0.1 %, with every statement it runs timed."""
    cur = engine.cursor()
    appender.append(round(base * 0.001))
    timings: list[tuple[float, str]] = []
    original = duckdb.DuckDBPyConnection.execute

    class Timing:
        def __init__(self, inner: duckdb.DuckDBPyConnection) -> None:
            self.inner = inner

        def execute(self, sql: str, *args: object) -> duckdb.DuckDBPyConnection:
            began = time.perf_counter()
            out = original(self.inner, sql, *args)
            drained = _Drained(out.description, out.fetchall() if out.description else [])
            timings.append((time.perf_counter() - began, " ".join(sql.split())[:110]))
            return drained  # type: ignore[return-value]

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    from warehouse.dynamic import refresh as refresh_module

    began = time.perf_counter()
    for name in names:
        refresh_module.refresh(Timing(cur), name)  # type: ignore[arg-type]
    total = time.perf_counter() - began
    said = " and ".join(names)
    lines = [f"one incremental refresh of {said}, +0.1 %: {total * 1000:.1f} ms in all", ""]
    lines += ["| ms | statement |", "|---:|---|"]
    lines += [f"| {s * 1000:.2f} | `{text}` |" for s, text in timings]
    cur.close()
    return lines


class _Drained:
    """A result already fetched (the profiler fetched it to time the statement whole)."""

    def __init__(self, description: object, rows: list[tuple[object, ...]]) -> None:
        self.description = description
        self._rows = rows

    def fetchall(self) -> list[tuple[object, ...]]:
        return self._rows
