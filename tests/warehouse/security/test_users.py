"""Users and tokens: SCRAM-SHA-256 verifiers (RFC 7677 test vector), never plaintext."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import duckdb
import pytest

from tests.warehouses import Warehouses
from warehouse.errors import UserError
from warehouse.security import users


@pytest.fixture
def cur(warehouses: Warehouses) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouses.engine() as engine:
        cursor = engine.cursor()
        yield cursor
        cursor.close()


def test_rfc7677_vector() -> None:
    # RFC 7677 §3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, i=4096
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    salted = users.salted_password("pencil", salt, 4096)
    client_nonce, server_nonce = (
        "rOprNGfwEbeRWgbNEkqO",
        "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    auth = (
        f"n=user,r={client_nonce},r={server_nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
        f"c=biws,r={server_nonce}"
    ).encode()
    import hashlib
    import hmac

    signature = hmac.new(users.server_key(salted), auth, hashlib.sha256).digest()
    assert base64.b64encode(signature) == b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    proof = bytes(
        a ^ b
        for a, b in zip(
            users.client_key(salted),
            hmac.new(users.stored_key(salted), auth, hashlib.sha256).digest(),
            strict=True,
        )
    )
    assert base64.b64encode(proof) == b"dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="


def test_password_checks_and_is_not_stored(cur: duckdb.DuckDBPyConnection) -> None:
    users.add_user(cur, "ann", "reader", "correct horse")
    assert users.check_password(cur, "ann", "correct horse") == users.User("ann", "reader")
    assert users.check_password(cur, "ann", "wrong") is None
    assert users.check_password(cur, "bob", "correct horse") is None
    stored = cur.execute("SELECT * FROM wanka.users").fetchall()
    assert b"correct horse" not in repr(stored).encode()
    secret = users.scram_secret(cur, "ann")
    assert secret is not None and secret.iterations == 4096 and len(secret.salt) == 16


def test_same_password_different_salt(cur: duckdb.DuckDBPyConnection) -> None:
    users.add_user(cur, "a", "reader", "pw")
    users.add_user(cur, "b", "reader", "pw")
    a, b = users.scram_secret(cur, "a"), users.scram_secret(cur, "b")
    assert a is not None and b is not None and a.stored_key != b.stored_key


def test_tokens(cur: duckdb.DuckDBPyConnection) -> None:
    assert not users.any_users(cur)
    users.add_user(cur, "w", "writer", "pw")
    assert users.any_users(cur)
    token = users.create_token(cur, "w")
    assert users.check_token(cur, token) == users.User("w", "writer")
    assert users.check_token(cur, token + "x") is None
    assert cur.execute(
        "SELECT count(*) FROM wanka.tokens WHERE token_sha256 = ?", [token]
    ).fetchall() == [(0,)]
    with pytest.raises(UserError, match="no user named"):
        users.create_token(cur, "nobody")


@pytest.mark.parametrize(
    ("name", "role"), [("ann", "root"), ("bad name", "reader"), ("", "reader")]
)
def test_bad_users_refused(cur: duckdb.DuckDBPyConnection, name: str, role: str) -> None:
    with pytest.raises(UserError):
        users.add_user(cur, name, role, "pw")
