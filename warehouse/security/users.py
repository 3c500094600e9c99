"""Users, roles and bearer tokens, stored as SCRAM-SHA-256 verifiers and token digests.

A password is never stored. What is stored is what RFC 5802/7677 (SCRAM-SHA-256) keeps on the
server: a salt, an iteration count, StoredKey and ServerKey. pgwire runs the SCRAM exchange with
them (`scram_secret`); HTTP Basic checks a password by recomputing StoredKey (`check_password`).
A bearer token is 32 random bytes shown once; only its SHA-256 is stored.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

import duckdb

from warehouse.errors import UserError

ROLES = ("reader", "writer", "admin")
ITERATIONS = 4096
SALT_BYTES = 16
TOKEN_PREFIX = "wk_"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,62}")


@dataclass(frozen=True)
class User:
    """Who a request runs as."""

    name: str
    role: str


@dataclass(frozen=True)
class ScramSecret:
    """A user's SCRAM-SHA-256 verifiers, as pgwire needs them."""

    user: User
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def salted_password(password: str, salt: bytes, iterations: int) -> bytes:
    """SaltedPassword = Hi(password, salt, i), i.e. PBKDF2-HMAC-SHA256 (RFC 5802 §3)."""
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)


def client_key(salted: bytes) -> bytes:
    """ClientKey = HMAC(SaltedPassword, "Client Key")."""
    return hmac.new(salted, b"Client Key", hashlib.sha256).digest()


def stored_key(salted: bytes) -> bytes:
    """StoredKey = H(ClientKey).

    >>> stored_key(salted_password("pencil", b"salt", 1)).hex()[:16]
    '3ad93991d9c0a3fe'
    """
    return hashlib.sha256(client_key(salted)).digest()


def server_key(salted: bytes) -> bytes:
    """ServerKey = HMAC(SaltedPassword, "Server Key")."""
    return hmac.new(salted, b"Server Key", hashlib.sha256).digest()


def check_role(role: str) -> str:
    """`role` when it is one of ROLES, else a UserError naming them."""
    if role not in ROLES:
        raise UserError(f"unknown role {role!r}: expected one of {', '.join(ROLES)}")
    return role


def check_name(name: str) -> str:
    """A user name: letters, digits, '_', '.', '-', starting with a letter or '_'."""
    if not _NAME.fullmatch(name):
        raise UserError(
            f"bad user name {name!r}: use letters, digits, '_', '.' or '-' (at most 63), "
            "starting with a letter or '_'"
        )
    return name


def add_user(cur: duckdb.DuckDBPyConnection, name: str, role: str, password: str) -> User:
    """Create user `name` (or replace its role and password); returns it."""
    check_name(name)
    check_role(role)
    if not password:
        raise UserError("the password is empty")
    salt = secrets.token_bytes(SALT_BYTES)
    salted = salted_password(password, salt, ITERATIONS)
    cur.execute(
        "INSERT OR REPLACE INTO wanka.users "
        "(name, role, salt, iterations, stored_key, server_key, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, now())",
        [name, role, salt, ITERATIONS, stored_key(salted), server_key(salted)],
    )
    return User(name, role)


def scram_secret(cur: duckdb.DuckDBPyConnection, name: str) -> ScramSecret | None:
    """The stored verifiers of user `name`, or None when there is no such user."""
    rows = cur.execute(
        "SELECT role, salt, iterations, stored_key, server_key FROM wanka.users WHERE name = ?",
        [name],
    ).fetchall()
    if not rows:
        return None
    role, salt, iterations, stored, server = rows[0]
    return ScramSecret(User(name, role), bytes(salt), int(iterations), bytes(stored), bytes(server))


def check_password(cur: duckdb.DuckDBPyConnection, name: str, password: str) -> User | None:
    """The user when `password` is theirs, else None (unknown users cost the same PBKDF2)."""
    secret = scram_secret(cur, name)
    salt = secret.salt if secret else b"\0" * SALT_BYTES
    iterations = secret.iterations if secret else ITERATIONS
    candidate = stored_key(salted_password(password, salt, iterations))
    expected = secret.stored_key if secret else b"\0" * len(candidate)
    if hmac.compare_digest(candidate, expected) and secret is not None:
        return secret.user
    return None


def token_digest(token: str) -> str:
    """The hex SHA-256 under which a token is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(cur: duckdb.DuckDBPyConnection, name: str) -> str:
    """A new bearer token for user `name`; shown once, only its digest is kept."""
    if scram_secret(cur, name) is None:
        raise UserError(f"no user named {name!r}: add it with `wanka user add`")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    cur.execute(
        "INSERT INTO wanka.tokens (token_sha256, user_name, created_at) VALUES (?, ?, now())",
        [token_digest(token), name],
    )
    return token


def check_token(cur: duckdb.DuckDBPyConnection, token: str) -> User | None:
    """The user a bearer token belongs to, or None; records when it was last used."""
    rows = cur.execute(
        "SELECT u.name, u.role FROM wanka.tokens t JOIN wanka.users u ON u.name = t.user_name "
        "WHERE t.token_sha256 = ?",
        [token_digest(token)],
    ).fetchall()
    if not rows:
        return None
    return User(rows[0][0], rows[0][1])


def touch_token(cur: duckdb.DuckDBPyConnection, token: str) -> None:
    """Record that a token was used now (callers rate-limit this; it is a write)."""
    cur.execute(
        "UPDATE wanka.tokens SET last_used_at = now() WHERE token_sha256 = ?",
        [token_digest(token)],
    )


def any_users(cur: duckdb.DuckDBPyConnection) -> bool:
    """Whether any user exists (a non-loopback bind requires one)."""
    return bool(cur.execute("SELECT count(*) FROM wanka.users").fetchall()[0][0])


def list_users(cur: duckdb.DuckDBPyConnection) -> list[User]:
    """Every user, by name."""
    rows = cur.execute("SELECT name, role FROM wanka.users ORDER BY name").fetchall()
    return [User(name, role) for name, role in rows]
