"""Prometheus's JSON for a query's rows: `data` of the query API's envelope.

Values are strings as Go's strconv.FormatFloat(v, 'f', -1, 64) writes them (shortest digits
that round-trip, never an exponent; NaN, +Inf, -Inf); timestamps are seconds, a whole number
when the millisecond part is zero, as Prometheus's jsonutil writes them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from warehouse.promql import text as api_text
from warehouse.promql.evaluate import Compiled


def value_text(value: float | None) -> str:
    return "NaN" if value is None else api_text.value_text(value)


def seconds(ms: int) -> float | int:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def labels(text: str | None) -> dict[str, str]:
    """A series' labels from the JSON object its row holds."""
    return dict(json.loads(text)) if text else {}


def data(compiled: Compiled, rows: Iterable[tuple[Any, ...]]) -> dict[str, Any]:
    """`{"resultType": ..., "result": ...}` from the rows `compiled.sql` returned."""
    grid = compiled.grid
    if compiled.kind == "string":
        return {"resultType": "string", "result": [seconds(grid.start_ms), compiled.text or ""]}
    if compiled.kind == "scalar":
        found = {int(k): v for k, v in rows}
        return {
            "resultType": "scalar",
            "result": [seconds(grid.start_ms), value_text(found.get(0))],
        }
    result: list[dict[str, Any]] = []
    for text, ks, vs in rows:
        metric = labels(text)
        if compiled.kind == "vector":
            result.append({"metric": metric, "value": [seconds(grid.start_ms), value_text(vs[0])]})
            continue
        times = ks if compiled.raw else [grid.start_ms + int(k) * grid.step_ms for k in ks]
        values = [[seconds(int(t)), value_text(v)] for t, v in zip(times, vs, strict=True)]
        result.append({"metric": metric, "values": values})
    return {"resultType": compiled.kind, "result": result}


#: A value DuckDB wrote with an exponent ("1e-07", "1.5e+16"): Go writes those positionally.
_EXPONENT = re.compile(r'"(-?[0-9.]+e[-+][0-9]+)"')


def _positional(found: re.Match[str]) -> str:
    return f'"{value_text(float(found.group(1)))}"'


def data_json(rows: Iterable[tuple[str, str]]) -> bytes:
    """`data` of a matrix answer as JSON bytes, from `Compiled.json_sql`'s rows: each series'
    labels and its points already written by DuckDB."""
    parts = []
    for text, points in rows:
        if "e" in points:
            points = _EXPONENT.sub(_positional, points)
        parts.append(f'{{"metric":{text},"values":[{points}]}}')
    return ('{"resultType":"matrix","result":[' + ",".join(parts) + "]}").encode()


def answer(
    compiled: Compiled,
    rows_of: Callable[[str], Iterable[Any]],
    tables_of: Callable[[str, dict[str, Any]], pa.Table] | None = None,
    check: Callable[[], None] = lambda: None,
) -> dict[str, Any] | bytes:
    """`data` of the answer to `compiled`, `rows_of(sql)` running its SQL: JSON bytes for a
    matrix of series (DuckDB writes the points), else a dict. Given `tables_of` (SQL and its
    named parameters in, Arrow out, in the same session), a query with a fast path
    (`native.py`) takes it; `check` raises to stop it (a time limit, a cancel)."""
    if compiled.native is not None and tables_of is not None:
        from warehouse.promql import native

        found = native.answer(compiled.native, tables_of, check)
        if found is not None:
            return found
    if compiled.kind == "matrix" and compiled.json_sql is not None:
        return data_json(rows_of(compiled.json_sql))
    return data(compiled, rows_of(compiled.sql))
