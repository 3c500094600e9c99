"""Errors a person can act on. Each carries the exit status the CLI uses for it.

`sql_error` turns DuckDB's errors into these (exit 2 when the SQL itself is wrong, 1 when the
system failed), `one_line` its multi-line texts into one line, `cut_short` tells a syntax error
at the end of a statement from one in it.
"""

from __future__ import annotations

import functools

import duckdb


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


# DuckDB errors that mean the SQL itself is wrong (exit 2), as opposed to the system failing.
_INPUT_ERRORS: tuple[type[duckdb.Error], ...] = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.InvalidInputException,
    duckdb.ConversionException,
    duckdb.ConstraintException,
    duckdb.NotImplementedException,
    duckdb.SyntaxException,
    duckdb.TransactionException,
    duckdb.OutOfRangeException,
)


def one_line(message: str) -> str:
    """DuckDB's multi-line error text as one line a person can act on.

    >>> one_line('Catalog Error: no table x!\\nDid you mean "y"?\\n\\nLINE 1: select ...')
    'Catalog Error: no table x! Did you mean "y"?'
    """
    kept = [line.strip() for line in message.splitlines() if line.strip()]
    kept = [line for line in kept if not line.startswith("LINE ") and set(line) != {"^"}]
    return " ".join(kept)


def sql_error(error: duckdb.Error) -> WankaError:
    """Map a DuckDB error to a wanka error with the right exit status."""
    failed_commit = "Failed to commit" in str(error)  # e.g. the disk is full: not the input
    cls = UserError if isinstance(error, _INPUT_ERRORS) and not failed_commit else WankaError
    return cls(one_line(str(error)))


def cut_short(statement: str) -> bool:
    """Whether DuckDB's parser finds `statement` only cut short (PostgreSQL: "syntax error at
    end of input"), where its error names the last token either way.

    Told apart by parsing the statement with one more word: the error then moves on to it.

    >>> cut_short("select * from t where"), cut_short("select 1 2")
    (True, False)
    """
    probe = "wanka_probe_word"
    try:
        _parser().cursor().extract_statements(f"{statement} {probe}")
    except duckdb.Error as error:
        return probe in str(error).split("\n", 1)[0]
    return True


@functools.cache
def _parser() -> duckdb.DuckDBPyConnection:
    """A database for DuckDB's parser alone, opened on first use (a cursor per call)."""
    return duckdb.connect()
