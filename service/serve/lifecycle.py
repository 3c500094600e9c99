"""`wanka serve`'s life under signals, as a unit file or a container runtime drives it.

- **SIGHUP** rereads the configuration file (service/config/reload.py), on a thread of its own;
  without a file it is logged and ignored, never fatal (a unit's `ExecReload=kill -HUP` must not
  stop the service).
- **Start-up**: HTTP listens at once; until the database is open and migrated and the parts
  have started, `/-/healthy` answers 200 and everything else 503 (`/-/ready` included).
- **SIGTERM** and **SIGINT**: `/-/ready` turns 503 at once; the HTTP server stops accepting and
  waits up to `shutdown.grace_period` for the requests in flight, then cancels them (uvicorn's
  graceful shutdown); the PostgreSQL endpoint stops accepting and waits as long for its running
  statements, then interrupts them (a statement interrupted rolls back). Then the parts stop
  (feeds after their round, the scheduler after its pass) and the database closes, and the
  process exits 0. A second SIGINT forces the stop.

uvicorn takes SIGTERM and SIGINT while it runs and raises them again once it stopped; the
handlers installed here first take that second delivery, so the process goes on to close the
database instead of dying of the signal.
"""

from __future__ import annotations

import logging
import math
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn

from service.serve.server import Server
from service.serve.settings import ServeSettings

if TYPE_CHECKING:
    from service.config.reload import Reloader

log = logging.getLogger("wanka.serve")


class _Server(uvicorn.Server):
    """uvicorn's server, telling wanka the moment it is asked to stop."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[int], None]) -> None:
        super().__init__(config)
        self.on_stop = on_stop

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.on_stop(sig)
        super().handle_exit(sig, frame)


@dataclass
class Opened:
    """What the opening started, to stop in order at the end."""

    server: Server
    pg: Any  # service.pgwire.Handle, or None
    reloader: Reloader | None


def serve_http(app: Any, settings: ServeSettings, opener: Callable[[], Opened]) -> None:
    """Serve HTTP on this thread while `opener` opens the database on another (the start-up
    gate answers 503 meanwhile: service/http/app.py); on a stop signal, stop as above. An error
    of the opening stops the server and is raised here once it stopped."""
    opened: list[Opened] = []
    failed: list[BaseException] = []

    def stopping(sig: int) -> None:
        log.info("stopping: %s received", signal.Signals(sig).name, extra={"signal": sig})
        for each in opened:
            each.server.state = "stopping"
            if each.pg is not None:  # stop accepting now; running statements get the grace
                threading.Thread(
                    target=each.pg.stop, kwargs={"grace_s": settings.shutdown_grace_s}, daemon=True
                ).start()

    def hangup(sig: int, frame: FrameType | None) -> None:
        reloader = opened[0].reloader if opened else None
        if reloader is None:
            log.warning("SIGHUP received, but wanka serve was started without --config")
            return
        log.info("SIGHUP received: rereading %s", settings.config_file or "the rule files")
        reloader.in_background()

    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,  # wanka's handler (service/serve/logs.py)
        access_log=True,  # shown or not by its logger's level (service/serve/logs.py)
        timeout_graceful_shutdown=max(1, math.ceil(settings.shutdown_grace_s)),
        ssl_certfile=str(settings.tls.cert) if settings.tls else None,
        ssl_keyfile=str(settings.tls.key) if settings.tls else None,
    )
    http = _Server(config, stopping)

    def open_all() -> None:
        try:
            opened.append(opener())
        except BaseException as error:  # raised again on the main thread below
            failed.append(error)
            http.should_exit = True

    opening = threading.Thread(target=open_all, name="wanka-open", daemon=True)
    previous = _install(hangup)
    try:
        opening.start()
        http.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        opening.join()  # an opening under way finishes before anything closes
        for each in opened:
            each.server.state = "stopping"
            if each.pg is not None:
                each.pg.stop(grace_s=settings.shutdown_grace_s)
            each.server.close()
    if failed:
        raise failed[0]


def _install(hangup: Any) -> dict[int, Any]:
    """SIGHUP to `hangup`; SIGTERM and SIGINT to a handler that only notes a late delivery
    (uvicorn's own take them while it runs). The handlers they had, to put back."""

    def late(sig: int, frame: FrameType | None) -> None:
        log.debug("%s delivered again after the stop", signal.Signals(sig).name)

    if threading.current_thread() is not threading.main_thread():
        return {}  # signals reach only the main thread (a test may serve on another)
    previous: dict[int, Any] = {signal.SIGHUP: signal.signal(signal.SIGHUP, hangup)}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, late)
    return previous
