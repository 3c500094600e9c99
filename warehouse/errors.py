"""Errors a person can act on. Each carries the exit status the CLI uses for it."""

from __future__ import annotations


class WankaError(Exception):
    """A failure with a one-line message meant for the person at the keyboard."""

    exit_code = 1


class UserError(WankaError):
    """Bad usage or bad input: exit status 2."""

    exit_code = 2


class DatabaseLocked(WankaError):
    """Another process holds the database file."""

    exit_code = 1


class SchemaTooNew(WankaError):
    """The database file was written by a newer wanka."""

    exit_code = 1
