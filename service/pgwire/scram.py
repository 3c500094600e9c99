"""The server side of SCRAM-SHA-256 (RFC 5802 / RFC 7677) as PostgreSQL speaks it.

The server stores only StoredKey and ServerKey (never the password): it checks the client's proof
against StoredKey and proves itself with a signature from ServerKey. No channel binding: the
client's GS2 header must be 'n,,' or 'y,,' and only SCRAM-SHA-256 is advertised.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Protocol

MECHANISM = "SCRAM-SHA-256"


class Verifier(Protocol):
    """What the server keeps for a user (`warehouse.security.users.ScramSecret`)."""

    @property
    def salt(self) -> bytes: ...
    @property
    def iterations(self) -> int: ...
    @property
    def stored_key(self) -> bytes: ...
    @property
    def server_key(self) -> bytes: ...


class AuthFailed(Exception):
    """The exchange did not prove the password."""


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def _attributes(text: str) -> dict[str, str]:
    pairs = {}
    for part in text.split(","):
        if len(part) >= 2 and part[1] == "=":
            pairs[part[0]] = part[2:]
    return pairs


@dataclass(frozen=True)
class FakeVerifier:
    """Stands in for an unknown user so the exchange looks the same and then fails."""

    salt: bytes
    iterations: int = 4096
    stored_key: bytes = b""
    server_key: bytes = b""


class ScramExchange:
    """One authentication exchange: client-first -> server-first -> client-final -> server-final."""

    def __init__(self, verifier: Verifier | None) -> None:
        self.verifier: Verifier = verifier or FakeVerifier(secrets.token_bytes(16))
        self.known = verifier is not None
        self.server_first = ""
        self.client_first_bare = ""
        self.nonce = ""

    def first(self, client_first: bytes) -> bytes:
        """Answer the client-first-message (body of SASLInitialResponse)."""
        text = client_first.decode()
        gs2, _, bare = text.partition(",")
        authzid, _, bare = bare.partition(",")
        if gs2 not in ("n", "y") or authzid:
            raise AuthFailed("channel binding is not supported; use SCRAM-SHA-256")
        client_nonce = _attributes(bare).get("r")
        if not client_nonce:
            raise AuthFailed("SCRAM client-first-message has no nonce")
        self.client_first_bare = bare
        self.nonce = client_nonce + base64.b64encode(secrets.token_bytes(18)).decode()
        salt = base64.b64encode(self.verifier.salt).decode()
        self.server_first = f"r={self.nonce},s={salt},i={self.verifier.iterations}"
        return self.server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        """Check the client-final-message; return the server-final-message."""
        text = client_final.decode()
        attributes = _attributes(text)
        if attributes.get("r") != self.nonce:
            raise AuthFailed("SCRAM nonce mismatch")
        if attributes.get("c") not in ("biws", "eSws"):  # base64 of 'n,,' and 'y,,'
            raise AuthFailed("channel binding is not supported")
        without_proof = text[: text.rindex(",p=")]
        auth_message = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        proof = base64.b64decode(attributes.get("p", ""))
        signature = _hmac(self.verifier.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if (
            not self.known
            or len(proof) != len(signature)
            or not hmac.compare_digest(
                hashlib.sha256(client_key).digest(), self.verifier.stored_key
            )
        ):
            raise AuthFailed("password authentication failed")
        server_signature = _hmac(self.verifier.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)
