"""Rereading the configuration file of a running `wanka serve` (SIGHUP, `POST /-/reload`).

All or nothing: the whole file is read and checked first (service/config/build.py); a bad file
changes nothing, is logged with why, and sets `wanka_config_last_reload_successful` to 0. A good
one is handed to every part of the server (`Server.apply`): scrape targets and intervals, Slurm
polling, retention rules, the scheduler's interval, query limits and logging change at once.
What is fixed while the process runs (`RESTART`: the database, the addresses listened on, TLS,
the memory limit) keeps its running value, and the reload says which of those need a restart.
Flags given on the command line still override the file.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from service.config import build
from service.serve import logs
from service.serve.server import Server
from service.serve.settings import ServeSettings
from warehouse.errors import UserError

log = logging.getLogger("wanka.config")

#: What a reload cannot change: (what the log calls it, how to read it from the settings).
RESTART: tuple[tuple[str, Any], ...] = (
    ("db", lambda s: s.db),
    ("listen.http", lambda s: (s.host, s.port)),
    ("listen.postgres", lambda s: (s.pg_bind, s.pg_port)),
    ("tls", lambda s: s.tls),
    ("memory_limit", lambda s: s.limits.memory_limit),
)


@dataclasses.dataclass
class Outcome:
    """What a reload did: whether the file was taken, why not, what waits for a restart."""

    ok: bool
    error: str | None = None
    needs_restart: list[str] = dataclasses.field(default_factory=list)


class Reloader:
    """Rereads `file` under `flags` and applies it to `server`, one reload at a time (with no
    file, the flags alone: the rule files given by --rule-file are reread)."""

    def __init__(self, server: Server, file: Path | None, flags: Mapping[str, Any]) -> None:
        self.server, self.file, self.flags = server, file, dict(flags)
        self._lock = threading.Lock()

    def _what(self) -> str:
        return str(self.file) if self.file is not None else "--rule-file"

    def reload(self) -> Outcome:
        with self._lock:
            return self._reload()

    def _reload(self) -> Outcome:
        server, running = self.server, self.server.settings
        try:
            wanted = build.load(self.file, self.flags)
        except UserError as error:
            return self._refused(str(error))
        later = [name for name, read in RESTART if read(wanted) != read(running)]
        applied = _keep_fixed(wanted, running)
        try:
            server.apply(applied)
        except UserError as error:  # a part refused it (a retention rule, a file_sd file)
            server.apply(running)
            return self._refused(str(error))
        logs.configure(applied.log)
        server.config_read = (True, time.time())
        if later:
            log.warning(
                "configuration reloaded; these take effect only at a restart: %s",
                ", ".join(later),
                extra={"file": self._what()},
            )
        else:
            log.info("configuration reloaded", extra={"file": self._what()})
        return Outcome(True, needs_restart=later)

    def _refused(self, why: str) -> Outcome:
        self.server.config_read = (False, self.server.config_read[1])
        log.error(
            "configuration not reloaded, the running one kept: %s",
            why,
            extra={"file": self._what()},
        )
        return Outcome(False, error=why)

    def in_background(self) -> None:
        """Reload on a thread of its own (what SIGHUP does: a signal handler must not wait)."""
        threading.Thread(target=self.reload, name="wanka-reload", daemon=True).start()


def _keep_fixed(wanted: ServeSettings, running: ServeSettings) -> ServeSettings:
    """`wanted` with what cannot change while running taken from `running`."""
    limits = dataclasses.replace(wanted.limits, memory_limit=running.limits.memory_limit)
    return dataclasses.replace(
        wanted,
        db=running.db,
        host=running.host,
        port=running.port,
        pg_host=running.pg_host,
        pg_port=running.pg_port,
        tls=running.tls,
        limits=limits,
        config_file=running.config_file,
    )
