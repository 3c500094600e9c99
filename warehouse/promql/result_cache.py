"""Range queries answered in part from earlier answers: the steps of a repeated range query that
lie well in the past are kept, and only the newest are evaluated again.

Grafana asks each panel's range query again at every refresh, over a window that has moved on by
the refresh interval, and every person watching the dashboard asks the same ones. A step's value
depends only on samples at or before it (within its lookback or range), so the steps at or
before `now - offset` stay right for as long as no sample at or before them is written or
deleted. VictoriaMetrics keeps its range answers the same way (its rollup result cache, with
`-search.cacheTimestampOffset` 5 minutes).

What keeps it right: every write passes the write gate, and a writer that stored a sample older
than `now - offset`, or that cannot say how old its samples are (SQL DML, file ingest,
retention), empties the cache as it gives the gate back (`note_write`, called from
service/serve/writes.py). An answer is kept under the generation the cache had when its query
began, so one that ran while such a write committed is never used.

Not kept: an expression with `@` (a step would depend on the query's start or end), a subquery,
or a negative offset (a step would read samples after it), an answer that is not a matrix, and
one over `max_points` points. Entries are kept per user (readers may see different rows), per
expression, step, grid phase and lookback, the least recently used dropped first.
"""

from __future__ import annotations

import bisect
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Writers that never write samples PromQL reads (dynamic tables, tiers, cutting samples into
#: blocks with the same values, Slurm's jobs): giving the gate back leaves the cache as it is.
NO_SAMPLES = frozenset({"refresh", "tiers", "compaction", "slurm"})
_SUBQUERY = re.compile(r"\[[^\]]*:")  # `[5m:1m]`, `[1h:]` (a label value may match: not kept)
_NEGATIVE_OFFSET = re.compile(r"offset\s*-", re.IGNORECASE)

Answer = dict[str, Any] | bytes


def cacheable(expression: str) -> bool:
    """Whether each step of `expression` depends only on samples at or before it, and not on
    the query's start or end.

    >>> cacheable('avg(rate(DCGM_FI_PROF_NVLINK_TX_BYTES[5m] offset 1h))')
    True
    >>> [cacheable(e) for e in ('up @ end()', 'max_over_time(up[1h:5m])', 'up offset -5m')]
    [False, False, False]
    """
    return (
        "@" not in expression
        and not _SUBQUERY.search(expression)
        and not (_NEGATIVE_OFFSET.search(expression))
    )


@dataclass
class _Series:
    labels: str  # the `metric` object as JSON text
    times: list[int] = field(default_factory=list)  # ms
    values: list[str] = field(default_factory=list)  # as the API writes them


@dataclass
class _Entry:
    generation: int
    first_ms: int
    last_ms: int  # the last step kept (at or before now - offset when it was kept)
    series: dict[str, _Series]
    points: int


class ResultCache:
    """Earlier range answers, their steps up to `now - offset_s` (see the module's docstring)."""

    def __init__(
        self,
        offset_s: float = 300.0,
        max_points: int = 300_000,
        clock: Callable[[], float] = time.time,
        answered: Callable[[str], None] = lambda kind: None,
    ) -> None:
        self.offset_ms = int(offset_s * 1000)
        self.max_points = max_points
        self.clock = clock
        #: told how each answer was made: "hit" (no step evaluated), "partial", "miss" or
        #: "bypass" (not a matrix, or too large to keep)
        self._answered = answered
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        self._points = 0
        self.generation = 0

    # -- writes ----------------------------------------------------------------------------

    def note_write(self, writer: str, oldest_ms: int | None) -> None:
        """A writer gave the write gate back, having written samples no older than `oldest_ms`
        (None: it cannot say). Empties the cache unless that cannot touch a kept step."""
        if writer in NO_SAMPLES:
            return
        if oldest_ms is not None and oldest_ms > self._now_ms() - self.offset_ms:
            return
        self.clear()

    def set_offset(self, offset_s: float | None) -> None:
        """Keep steps older than `offset_s` from now on (None or 0: none); what was kept under
        another offset is dropped."""
        offset_ms = int((offset_s or 0.0) * 1000)
        if offset_ms != self.offset_ms:
            self.offset_ms = offset_ms
            self.clear()

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()
            self._points = 0

    # -- reads -----------------------------------------------------------------------------

    def range_answer(
        self,
        key: tuple[Any, ...],
        start_ms: int,
        end_ms: int,
        step_ms: int,
        compute: Callable[[int, int], Answer],
    ) -> Answer:
        """The answer of the range query `key` over [start_ms, end_ms]: the kept steps, and
        `compute(lo, hi)` (the same query over [lo, hi], on the same grid) for the rest."""
        key = (*key, step_ms, start_ms % step_ms, end_ms - start_ms)
        generation = self.generation  # before any step is evaluated
        entry = self._get(key, generation)
        if entry is not None and entry.first_ms <= start_ms <= entry.last_ms + step_ms:
            fresh_from = entry.last_ms + step_ms
            kept = _window(entry.series, start_ms, min(end_ms, entry.last_ms))
            fresh = _series_of(compute(fresh_from, end_ms)) if fresh_from <= end_ms else {}
            if fresh is None:  # not a matrix after all: answer it whole
                return self._bypass(key, compute(start_ms, end_ms))
            merged = _merge(kept, fresh)
            self._answered("hit" if fresh_from > end_ms else "partial")
        else:
            answer = compute(start_ms, end_ms)
            found = _series_of(answer)
            if found is None:
                return self._bypass(key, answer)
            merged = found
            self._answered("miss")
        cut = start_ms + (self._now_ms() - self.offset_ms - start_ms) // step_ms * step_ms
        self._put(key, generation, start_ms, min(cut, end_ms), merged)
        return render(merged)

    def _bypass(self, key: tuple[Any, ...], answer: Answer) -> Answer:
        self._answered("bypass")
        with self._lock:
            self._drop(key)
        return answer

    def _drop(self, key: tuple[Any, ...]) -> None:
        """Forget the entry of `key`, if any (the lock held)."""
        dropped = self._entries.pop(key, None)
        self._points -= dropped.points if dropped is not None else 0

    @property
    def points(self) -> int:
        """The points kept, all entries together."""
        return self._points

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    def _get(self, key: tuple[Any, ...], generation: int) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.generation != generation:
                return None
            self._entries.move_to_end(key)
            return entry

    def _put(
        self,
        key: tuple[Any, ...],
        generation: int,
        first_ms: int,
        last_ms: int,
        series: dict[str, _Series],
    ) -> None:
        kept = _window(series, first_ms, last_ms) if last_ms >= first_ms else {}
        points = sum(len(s.times) for s in kept.values())
        with self._lock:
            self._drop(key)
            if generation != self.generation or not kept or points > self.max_points // 4:
                return
            self._entries[key] = _Entry(generation, first_ms, last_ms, kept, points)
            self._points += points
            while self._points > self.max_points:
                _, dropped = self._entries.popitem(last=False)
                self._points -= dropped.points


#: A larger answer is not read back to be kept: parsing it would cost more than it saves.
MAX_ANSWER_BYTES = 4 << 20


def _series_of(answer: Answer) -> dict[str, _Series] | None:
    """A matrix answer's series by their labels' JSON text; None for any other answer, and for
    one too large to keep."""
    if isinstance(answer, bytes) and len(answer) > MAX_ANSWER_BYTES:
        return None
    data = json.loads(answer) if isinstance(answer, bytes) else answer
    if data.get("resultType") != "matrix":
        return None
    if sum(len(item["values"]) for item in data["result"]) > MAX_ANSWER_BYTES // 16:
        return None
    found: dict[str, _Series] = {}
    for item in data["result"]:
        labels = json.dumps(item["metric"], separators=(",", ":"), ensure_ascii=False)
        series = found.setdefault(labels, _Series(labels))
        for t, v in item["values"]:
            series.times.append(round(t * 1000))
            series.values.append(v)
    return found


def _window(series: dict[str, _Series], lo_ms: int, hi_ms: int) -> dict[str, _Series]:
    """The points in [lo_ms, hi_ms] of each series that has some there."""
    kept = {}
    for labels, s in series.items():
        a, b = bisect.bisect_left(s.times, lo_ms), bisect.bisect_right(s.times, hi_ms)
        if a < b:
            kept[labels] = _Series(labels, s.times[a:b], s.values[a:b])
    return kept


def _merge(older: dict[str, _Series], newer: dict[str, _Series]) -> dict[str, _Series]:
    """Each series' older points, then its newer ones (all later)."""
    merged = dict(older)
    for labels, s in newer.items():
        before = merged.get(labels)
        merged[labels] = (
            s
            if before is None
            else _Series(labels, before.times + s.times, before.values + s.values)
        )
    return merged


def _seconds(ms: int) -> str:
    return str(ms // 1000) if ms % 1000 == 0 else repr(ms / 1000)


def render(series: dict[str, _Series]) -> bytes:
    """`data` of a matrix answer, its series in the order of their labels' text."""
    parts = []
    for labels in sorted(series):
        s = series[labels]
        points = ",".join(f'[{_seconds(t)},"{v}"]' for t, v in zip(s.times, s.values, strict=True))
        parts.append(f'{{"metric":{labels},"values":[{points}]}}')
    return ('{"resultType":"matrix","result":[' + ",".join(parts) + "]}").encode()
