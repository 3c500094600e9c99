"""refresh_history times are wall-clock times of the refresh, not of its transaction's start."""

from __future__ import annotations

from tests.warehouses import Warehouses
from warehouse.dynamic import history
from warehouse.dynamic.history import RefreshResult


def test_finished_at_is_when_the_refresh_ended(warehouses: Warehouses) -> None:
    with warehouses.engine() as eng:
        cur = eng.cursor()
        cur.execute("BEGIN TRANSACTION")
        started = cur.execute("SELECT now()").fetchall()[0][0]
        cur.execute("SELECT count(*) FROM range(1000000)").fetchall()  # the refresh's work
        history.record(cur, RefreshResult("t", "full", None, 0, 0, started, started))
        cur.execute("COMMIT")
        [(began, ended)] = cur.execute(
            "SELECT started_at, finished_at FROM wanka.refresh_history"
        ).fetchall()
        assert ended > began  # now() would have given the transaction's start: equal
