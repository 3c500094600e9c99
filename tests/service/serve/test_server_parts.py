"""The serve process is made of parts (auth, sessions, writer, scheduler, feeds) that share one
core; `Server.start(settings)` starts them, `apply` hands them new settings, `close` stops them."""

from __future__ import annotations

import threading

from service.serve.server import Limits, Server
from service.serve.settings import ServeSettings
from warehouse.security.users import User

READER = User("ann", "reader")


def schedulers() -> int:
    return sum(t.name == "wanka-scheduler" for t in threading.enumerate())


def test_new_limits_apply_to_the_sessions_opened_after_them() -> None:
    with Server(":memory:", limits=Limits(timeout_s=30, max_rows_json=1000)) as server:
        before = server.session(READER, fmt="json")
        server.apply(ServeSettings(None, limits=Limits(timeout_s=5, max_rows_json=7)))
        after = server.session(READER, fmt="json")
        assert (before.timeout_s, before.max_rows) == (30, 1000)
        assert (after.timeout_s, after.max_rows) == (5, 7)
        assert server.limits == Limits(timeout_s=5, max_rows_json=7)
        before.close()
        after.close()


def test_start_runs_the_scheduler_the_settings_ask_for_and_close_stops_it() -> None:
    running = schedulers()
    server = Server(":memory:")
    server.start()  # a server opened without settings runs no scheduler
    assert schedulers() == running
    server.apply(ServeSettings(None, refresh_interval_s=30.0))
    assert schedulers() == running + 1
    server.close()
    assert schedulers() == running
