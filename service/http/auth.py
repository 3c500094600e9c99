"""Who is calling: HTTP Basic (user and password) or `Authorization: Bearer` (a wanka token).

Wrong or missing credentials are a 401 and say which schemes work. A server with no users at all,
bound to loopback, lets unauthenticated local callers in as a local admin (as the CLI would be);
once a user exists, every call needs credentials.
"""

from __future__ import annotations

import base64
import binascii

from fastapi import HTTPException, Request

from service.http.workers import off_loop
from service.serve.server import Server
from warehouse.security.users import User

LOCAL = User("local", "admin")
CHALLENGE = {"WWW-Authenticate": 'Basic realm="wanka", charset="UTF-8", Bearer'}


def unauthorized(message: str) -> HTTPException:
    return HTTPException(status_code=401, detail=message, headers=CHALLENGE)


def authenticate(
    server: Server, header: str | None, *, open_locally: bool, address: str = "unknown"
) -> User:
    """The user an Authorization header names; raises a 401 HTTPException otherwise.

    Failed logins count against the caller's address (service/serve/throttle.py): past the limit the
    address gets 429 until its lockout ends, without its credentials being checked.
    """
    if header and (wait_s := server.auth_throttle.wait_s(address)):
        raise HTTPException(
            status_code=429,
            detail=f"too many failed logins from {address}: try again in {wait_s:.0f} s",
            headers={"Retry-After": str(int(wait_s) + 1)},
        )
    try:
        user = _authenticate(server, header, open_locally=open_locally)
    except HTTPException:
        if header:
            server.auth_throttle.failed(address, _claimed_user(header), "HTTP")
        raise
    if header:
        server.auth_throttle.succeeded(address)
    return user


def _claimed_user(header: str) -> str:
    """The user name a Basic header claims ('<token>' for Bearer): for the log, no secret."""
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return "<token>"
    try:
        return base64.b64decode(value.strip(), validate=True).decode().partition(":")[0]
    except (binascii.Error, UnicodeDecodeError):
        return "<malformed>"


def _authenticate(server: Server, header: str | None, *, open_locally: bool) -> User:
    if not header:
        if open_locally:
            return LOCAL
        raise unauthorized("credentials required: HTTP Basic (user:password) or a Bearer token")
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        user = server.check_token(value)
        if user is None:
            raise unauthorized("unknown or revoked token")
        return user
    if scheme.lower() == "basic" and value:
        try:
            name, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise unauthorized("malformed Basic credentials") from None
        user = server.check_password(name, password) if sep else None
        if user is None:
            raise unauthorized("wrong user name or password")
        return user
    raise unauthorized("unsupported authorization scheme: use Basic or Bearer")


async def current_user(request: Request) -> User:
    """FastAPI dependency: the calling user. A credential checked in the last minute is known
    without leaving the event loop; checking a new one (PBKDF2, the database) runs on a worker."""
    state = request.app.state
    header = request.headers.get("authorization")
    address = request.client.host if request.client else "unknown"
    known = _known(state.server, header, address)
    if known is not None:
        return known
    return await off_loop(
        request,
        authenticate,
        state.server,
        header,
        open_locally=state.open_locally,
        address=address,
    )


def _known(server: Server, header: str | None, address: str) -> User | None:
    """The user of a credential in the server's cache of successful checks, else None."""
    if not header or server.auth_throttle.wait_s(address):
        return None  # no credentials, or a locked-out address: the full check says what to do
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return server.cached_token(value)
    if scheme.lower() == "basic" and value:
        try:
            name, sep, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return server.cached_password(name, password) if sep else None
    return None
