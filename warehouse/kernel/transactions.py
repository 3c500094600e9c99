"""The one way wanka opens a transaction of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress

import duckdb

#: A writer's turn at the serve process's write gate. A long job (compaction, retention, the
#: refresh of many dynamic tables) takes one around each of its transactions, not one for the
#: whole job, so that remote_write's commits get in between; outside `wanka serve`, `no_turn`.
Turn = Callable[[], AbstractContextManager[object]]


def no_turn() -> AbstractContextManager[object]:
    """No gate to pass: the process has one writer."""
    return nullcontext()


@contextmanager
def transaction(cur: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN ... COMMIT on `cur`; anything raised inside (or by COMMIT) rolls it all back.

    The one way wanka opens a transaction of its own, so none is left open on a cursor after
    an error: the next statement on that cursor would otherwise run inside it.
    """
    cur.execute("BEGIN TRANSACTION")
    try:
        yield cur
        cur.execute("COMMIT")
    except BaseException:
        with suppress(duckdb.Error):  # COMMIT that failed has ended the transaction already
            cur.execute("ROLLBACK")
        raise
