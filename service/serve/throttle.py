"""Failed logins, counted per client address: a password guesser is slowed to a crawl.

After `max_failures` failed logins from one address within `window_s`, that address is refused
for `lockout_s` without its credentials being checked (HTTP 429, PostgreSQL 28000). Every
failure is logged with the face, the user name tried and the address — never the password or
token. Both faces share one throttle, so switching from HTTP to pgwire gains nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field

log = logging.getLogger("wanka.auth")


@dataclass
class AuthThrottle:
    max_failures: int = 10
    window_s: float = 60.0
    lockout_s: float = 60.0
    _failures: dict[str, deque[float]] = field(default_factory=dict)
    _locked_until: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_s(self, address: str) -> float:
        """Seconds `address` must still wait before trying again (0: it may try now)."""
        with self._lock:
            until = self._locked_until.get(address, 0.0)
            left = until - time.monotonic()
            if left <= 0 and until:
                del self._locked_until[address]
            return max(left, 0.0)

    def failed(self, address: str, user: str, face: str) -> None:
        """Count a failed login (and log it, without the secret that was tried)."""
        now = time.monotonic()
        with self._lock:
            recent = self._failures.setdefault(address, deque())
            recent.append(now)
            while recent and recent[0] < now - self.window_s:
                recent.popleft()
            locked = len(recent) >= self.max_failures
            if locked:
                self._locked_until[address] = now + self.lockout_s
                recent.clear()
            if len(self._failures) > 100_000:  # bounded memory under a spray of addresses
                self._failures.clear()
        log.warning("%s login failed for user %r from %s", face, user, address)
        if locked:
            log.warning(
                "%s: %d failed logins from %s within %g s: refused for %g s",
                face,
                self.max_failures,
                address,
                self.window_s,
                self.lockout_s,
            )

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)
