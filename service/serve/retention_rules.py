"""The retention rules a configuration file sets (`retention:` in wanka.yml), set at start and
again at each reload that changes them, through the write gate, in one transaction, exactly as
`ALTER TABLE t SET (retention = ...)` sets them (warehouse/dynamic/retention.py: a rule that
would lose what a dynamic table still needs is refused, and the server says why).

A table the file does not name keeps the rule it has: rules set in SQL or with `wanka retention`
are left alone. The scheduler applies the rules (drops the rows) on its passes as before.
"""

from __future__ import annotations

import functools
import logging

from service.serve.core import Core, Cursor
from service.serve.settings import ServeSettings

log = logging.getLogger("wanka.retention")

Rules = tuple[tuple[str, float | None], ...]


class RetentionRules:
    """A part of the server (`start`, `stop`, `apply`)."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._wanted: Rules = ()
        self._set: Rules = ()
        self._started = False

    def start(self) -> None:
        self._started = True
        self._sync()

    def stop(self) -> None:
        self._started = False

    def apply(self, settings: ServeSettings) -> None:
        """Set the rules of `settings` that changed (UserError when one is refused: the rules
        before it stay set)."""
        self._wanted = settings.retention
        if self._started:
            self._sync()

    def _sync(self) -> None:
        changed = [rule for rule in self._wanted if rule not in self._set]
        if not changed:
            return
        core = self._core
        with core.writes.hold(self, core.limits.timeout_s, "retention"):
            said = core.with_cursor(functools.partial(_set_all, rules=changed))
        for (table, _), what in zip(changed, said, strict=True):
            log.info("retention of %s: %s", table, what, extra={"table": table})
        self._set = self._wanted


def _set_all(cur: Cursor, rules: Rules | list[tuple[str, float | None]]) -> list[str]:
    """Set `rules` in one transaction: all of them, or (one refused) none."""
    cur.execute("BEGIN")
    try:
        said = [_set(cur, table, keep_s) for table, keep_s in rules]
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    cur.execute("COMMIT")
    return said


def _set(cur: Cursor, table: str, keep_s: float | None) -> str:
    from warehouse.dynamic import retention

    return retention.set_rule(cur, table, None if keep_s is None else said(keep_s))


def said(seconds: float) -> str:
    """A retention in words an INTERVAL takes.

    >>> said(14 * 86_400), said(36 * 3600), said(90.0)
    ('14 days', '36 hours', '90 seconds')
    """
    for unit, size in (("days", 86_400), ("hours", 3600), ("minutes", 60)):
        if seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} seconds"
