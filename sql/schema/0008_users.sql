-- Users and bearer tokens of the served warehouse (HTTP and pgwire).
--
-- A password is never stored: only its SCRAM-SHA-256 verifiers (RFC 5802/7677), which let HTTP
-- Basic check a password and pgwire run the SCRAM exchange. A token is stored as its SHA-256.

CREATE TABLE wanka.users (
    name        VARCHAR PRIMARY KEY,
    role        VARCHAR NOT NULL CHECK (role IN ('reader', 'writer', 'admin')),
    salt        BLOB NOT NULL,
    iterations  INTEGER NOT NULL,
    stored_key  BLOB NOT NULL,
    server_key  BLOB NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE wanka.tokens (
    token_sha256  VARCHAR PRIMARY KEY,
    user_name     VARCHAR NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_used_at  TIMESTAMPTZ
);
