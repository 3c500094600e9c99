"""The one way wanka opens a transaction of its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress

import duckdb


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
