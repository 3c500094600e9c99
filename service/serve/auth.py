"""Who a request is: passwords, tokens and SCRAM secrets checked against wanka.users, the
successful checks cached for a minute.

Why the cache: PBKDF2 on every request would cap a busy server at a few hundred requests a
second. Only successes are kept (a wrong password is checked again each time, and slowed by
`throttle.py`), and never the password itself: a Basic credential is keyed by its SHA-256.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from typing import TypeVar

import duckdb

from service.serve.core import Core, Cursor
from service.serve.settings import ServeSettings
from warehouse.security import policy
from warehouse.security import users as users_module
from warehouse.security.users import ROLES, User

CACHE_S = 60.0
K = TypeVar("K")


def _basic_key(name: str, password: str) -> tuple[str, bytes]:
    """The cache key of a Basic credential: the password itself is never kept."""
    return name, hashlib.sha256(password.encode()).digest()


def require(user: User, role: str, what: str) -> None:
    """Raise policy.Refused unless `user`'s role includes `role`."""
    if ROLES.index(user.role) < ROLES.index(role):
        raise policy.Refused(f"{what} needs the {role} role; {user.name} is a {user.role}")


class Auth:
    """Credential checks with a cache of successes; one per server, shared by both faces."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._lock = threading.Lock()
        self._basic: dict[tuple[str, bytes], tuple[User, float]] = {}
        self._token: dict[str, tuple[User, float]] = {}

    def start(self) -> None:
        """Nothing runs on its own: checks happen on the requests' threads."""

    def stop(self) -> None:
        """Forget the cached successes."""
        with self._lock:
            self._basic.clear()
            self._token.clear()

    def apply(self, settings: ServeSettings) -> None:
        """No setting concerns credentials yet; users and tokens live in the database."""

    def any_users(self) -> bool:
        return bool(self._core.with_cursor(users_module.any_users))

    def scram_secret(self, name: str) -> users_module.ScramSecret | None:
        """The SCRAM verifiers of `name`, for pgwire's authentication exchange."""
        return self._core.with_cursor(lambda cur: users_module.scram_secret(cur, name))

    def cached_password(self, name: str, password: str) -> User | None:
        """HTTP Basic from the cache of successful checks only (no database, no PBKDF2)."""
        return self._cached(self._basic, _basic_key(name, password))

    def cached_token(self, token: str) -> User | None:
        """Bearer from the cache of successful checks only."""
        return self._cached(self._token, token)

    def _cached(self, cache: dict[K, tuple[User, float]], key: K) -> User | None:
        with self._lock:
            hit = cache.get(key)
        return hit[0] if hit is not None and hit[1] > time.monotonic() else None

    def check_password(self, name: str, password: str) -> User | None:
        """HTTP Basic: the user when the password is right; successes cached for a minute."""
        hit = self.cached_password(name, password)
        if hit is not None:
            return hit
        user = self._core.with_cursor(lambda cur: users_module.check_password(cur, name, password))
        if user is not None:
            with self._lock:
                self._basic[_basic_key(name, password)] = (user, time.monotonic() + CACHE_S)
        return user

    def check_token(self, token: str) -> User | None:
        """Bearer: the token's user; successes cached for a minute, last use noted then."""
        hit = self.cached_token(token)
        if hit is not None:
            return hit

        def check(cur: Cursor) -> User | None:
            user = users_module.check_token(cur, token)
            if user is not None:
                # another request may note the same use at the same moment: one is enough
                with contextlib.suppress(duckdb.TransactionException):
                    users_module.touch_token(cur, token)
            return user

        user = self._core.with_cursor(check)
        if user is not None:
            with self._lock:
                self._token[token] = (user, time.monotonic() + CACHE_S)
        return user
