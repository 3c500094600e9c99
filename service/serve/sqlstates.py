"""The SQLSTATE of an error a wanka session raises, for errors `pgerror` does not reword.

A code the error carries wins, then its class, then the first pattern its text matches.
"""

from __future__ import annotations

import re

#: (pattern on the one-line message, SQLSTATE), first match wins
_BY_MESSAGE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), code)
    for pattern, code in (
        (r"interrupt|cancel|time limit|timed out|timeout", "57014"),
        (r"^Parser Error|syntax error", "42601"),
        (r"Catalog Error: (Table|View)[^:]*does not exist|Table with name", "42P01"),
        (r"Catalog Error: Schema", "3F000"),
        (r"Catalog Error: Scalar Function|Catalog Error: .*Function", "42883"),
        (r"Catalog Error: Type", "42704"),
        (r"Binder Error: Referenced table", "42P01"),
        (r"Binder Error: .*column|Referenced column|not found in FROM clause", "42703"),
        (r"Binder Error: No function matches|Could not choose a best candidate", "42883"),
        (r"Binder Error", "42P18"),
        (r"Catalog Error: .*already exists", "42P07"),
        (r"Catalog Error", "42704"),
        (r"Division by zero|divide by zero", "22012"),
        (r"Conversion Error|Could not convert|invalid input", "22P02"),
        (r"Out of Range|overflow", "22003"),
        (r"Constraint Error: (Duplicate key|PRIMARY KEY|UNIQUE)", "23505"),
        (r"Constraint Error: NOT NULL", "23502"),
        (r"Constraint Error", "23514"),
        (r"Conflict on|write-write conflict", "40001"),
        (r"Current transaction is aborted", "25P02"),
        (r"TransactionContext Error|Transaction Error", "25000"),
        (r"Not implemented", "0A000"),
        (r"Permission Error|read-only|not allowed|refused|permission denied", "42501"),
        (r"Out of Memory", "53200"),
        (r"Invalid Input Error", "22023"),
    )
)

_BY_CLASS = {
    "Refused": "42501",
    "ParameterError": "22P02",
    "QueryCancelled": "57014",
    "QueryTimeout": "57014",
    "TimeoutError": "57014",
    "OutOfMemory": "53200",
}


def sqlstate(error: BaseException) -> str:
    """The SQLSTATE a PostgreSQL client should see for `error`.

    >>> sqlstate(ValueError("Parser Error: syntax error at or near 'selec'"))
    '42601'
    >>> sqlstate(ValueError("Catalog Error: Table with name nope does not exist!"))
    '42P01'
    """
    code = getattr(error, "sqlstate", None)
    if isinstance(code, str) and len(code) == 5:
        return code
    for cls in type(error).__mro__:
        if cls.__name__ in _BY_CLASS:
            return _BY_CLASS[cls.__name__]
    message = str(error)
    for pattern, found in _BY_MESSAGE:
        if pattern.search(message):
            return found
    return "XX000"
