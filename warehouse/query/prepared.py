"""SELECT texts that run again, prepared once per cursor: EXECUTE skips parse, bind and plan.

Dashboards and health checks send the same few texts again and again. DuckDB spends most of a
small query's time before running it: `SELECT 1` costs 420 µs of CPU as text and 235 µs as
`EXECUTE` of a statement prepared on that cursor; a 10-group GROUP BY 1,000 µs against 870.
Through `routes_query.answer` on 32 threads, 1,500-1,700 queries/s became 2,050-2,130.

A text is prepared the second time it runs (a text seen once — a literal inlined by pgwire —
is never prepared), only without parameters and outside an explicit transaction (a PREPARE that
fails there would abort the client's transaction), under a name no client chooses. DuckDB re-binds a
prepared statement when a table it reads changes, and evaluates now() and random() per
execution, so EXECUTE answers what the text would. A statement that cannot be prepared runs as
text. Each cursor keeps at most `PER_CURSOR` prepared statements, older ones deallocated; the
names are kept by the cursor object itself (weakly), so a new cursor never inherits a closed
one's.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict

import duckdb

PER_CURSOR = 256
_SEEN_MAX = 8192

_lock = threading.Lock()
_seen: OrderedDict[str, None] = OrderedDict()  # texts run at least once
_unpreparable: set[str] = set()
#: cursor -> text -> name; an entry goes with its cursor
_names: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, OrderedDict[str, str]] = (
    weakref.WeakKeyDictionary()
)
_counter = itertools.count()


def name_for(cur: duckdb.DuckDBPyConnection, text: str) -> str | None:
    """The prepared statement to EXECUTE for `text` on `cur`, preparing it now if this is its
    second run; None to run the text itself."""
    with _lock:
        if text in _unpreparable:
            return None
        if text not in _seen:
            _seen[text] = None
            if len(_seen) > _SEEN_MAX:
                _seen.popitem(last=False)
            return None
        _seen.move_to_end(text)
        mine = _names.get(cur)
        if mine is None:
            mine = _names[cur] = OrderedDict()
        name = mine.get(text)
        if name is not None:
            mine.move_to_end(text)
            return name
    return _prepare(cur, text, mine)


def _prepare(cur: duckdb.DuckDBPyConnection, text: str, mine: OrderedDict[str, str]) -> str | None:
    name = f"wanka_prepared_{next(_counter)}"
    try:
        cur.execute(f"PREPARE {name} AS {text}")
    except duckdb.InterruptException:
        raise
    except duckdb.Error:
        with _lock:
            _unpreparable.add(text)  # DuckDB says what is wrong when it runs as text
        return None
    with _lock:
        mine[text] = name
        stale = mine.popitem(last=False)[1] if len(mine) > PER_CURSOR else None
    if stale is not None:
        cur.execute(f"DEALLOCATE {stale}")
    return name


def lost(cur: duckdb.DuckDBPyConnection, text: str) -> None:
    """`cur` no longer has the statement `name_for` gave for `text` (someone deallocated it):
    forget it, so the next run prepares it again."""
    with _lock:
        mine = _names.get(cur)
        if mine is not None:
            mine.pop(text, None)


def is_missing(error: duckdb.Error) -> bool:
    """Whether `error` says the prepared statement does not exist on this cursor."""
    message = str(error)
    return "Prepared statement" in message and "does not exist" in message
