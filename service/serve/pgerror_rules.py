"""PostgreSQL's wording of each kind of error wanka maps: the message, SQLSTATE, hint and
where in the client's text it points (`sqlspots`).

`PgError` is what a client is told. Each rule takes the match of its pattern on DuckDB's one-line
text (the patterns and their order are in `pgerror`) and says it as PostgreSQL 15 would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from service.serve.pgtypes import literal_type, pg_type, split_types
from service.serve.sqlspots import Spots
from warehouse.errors import cut_short

NO_FUNCTION_HINT = (
    "No function matches the given name and argument types. "
    "You might need to add explicit type casts."
)
NO_OPERATOR_HINT = (
    "No operator matches the given name and argument types. "
    "You might need to add explicit type casts."
)
NO_UNARY_OPERATOR_HINT = (
    "No operator matches the given name and argument type. "
    "You might need to add an explicit type cast."
)


@dataclass(frozen=True)
class PgError:
    """What a PostgreSQL client is told; `position` is 1-based, in the client's text."""

    code: str
    message: str
    detail: str | None = None
    hint: str | None = None
    position: int | None = None

    def fields(self) -> dict[str, str]:
        """The optional ErrorResponse fields that are known (detail, hint, position)."""
        found = {"detail": self.detail, "hint": self.hint, "position": self.position}
        return {key: str(value) for key, value in found.items() if value is not None}

    def as_json(self) -> dict[str, Any]:
        """`{"error": message, "sqlstate": code, ...}` with the known optional keys."""
        body: dict[str, Any] = {"error": self.message, "sqlstate": self.code}
        if self.position is not None:
            body["position"] = self.position
        body.update((k, v) for k, v in (("hint", self.hint), ("detail", self.detail)) if v)
        return body

    def line(self) -> str:
        """One line for a terminal: the message, where it is, the hint and DuckDB's text.

        >>> PgError("42703", 'column "x" does not exist', "Binder Error: ...", None, 8).line()
        'column "x" does not exist at character 8 (Binder Error: ...)'
        """
        where = f" at character {self.position}" if self.position is not None else ""
        hint = f" {self.hint}" if self.hint else ""
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.message}{where}{hint}{detail}"


# -- names ---------------------------------------------------------------------------------


def column(match: re.Match[str], spots: Spots) -> PgError:
    name = match["name"]
    shown = name if spots.quoted(name) else name.lower()
    return PgError(
        "42703",
        f'column "{shown}" does not exist',
        hint=_column_hint(name, match["candidates"] or "", spots),
        position=spots.identifier(name),
    )


def _column_hint(name: str, candidates: str, spots: Spots) -> str | None:
    """PostgreSQL's "Perhaps you meant" for a near miss (at most half the name's letters)."""
    names = re.findall(r'"([^"]+)"', candidates)
    scored = [(_distance(name.lower(), c.rsplit(".", 1)[-1].lower()), c) for c in names]
    close = [(d, c) for d, c in scored if d <= len(name) // 2]
    if not close:
        return None
    best = min(d for d, _ in close)
    table = spots.from_name()
    picked = [c if "." in c or table is None else f"{table}.{c}" for d, c in close if d == best]
    said = " or ".join(f'the column "{c}"' for c in picked[:2])
    return f"Perhaps you meant to reference {said}."


def _distance(a: str, b: str) -> int:
    """Levenshtein distance.

    >>> _distance("sttae", "state")
    2
    """
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def qualified_column(match: re.Match[str], spots: Spots) -> PgError:
    table, name = match["table"], match["name"]
    return PgError(
        "42703",
        f"column {table}.{name} does not exist",
        position=spots.qualified(table, name),
    )


def ambiguous(match: re.Match[str], spots: Spots) -> PgError:
    name = match["name"]
    return PgError(
        "42702", f'column reference "{name}" is ambiguous', position=spots.identifier(name)
    )


def missing_from(match: re.Match[str], spots: Spots) -> PgError:
    table = match["table"]
    return PgError(
        "42P01",
        f'missing FROM-clause entry for table "{table}"',
        position=spots.qualified(table),
    )


def relation(match: re.Match[str], spots: Spots) -> PgError:
    name = match["name"].strip('"').rsplit(".", 1)[-1]
    written = spots.qualified_text(name) or name
    if spots.first() == "drop":  # PostgreSQL names the kind it was asked to drop, nowhere
        return PgError("42P01", f'{match["kind"].lower()} "{written}" does not exist')
    where = None if spots.first() == "alter" else spots.relation(name)
    return PgError("42P01", f'relation "{written}" does not exist', position=where)


def exists(match: re.Match[str], spots: Spots) -> PgError:
    name = match["name"]
    if match["kind"] == "Schema":
        return PgError("42P06", f'schema "{name}" already exists')
    if match["kind"] == "Column":
        table = spots.after("table")
        return PgError("42701", f'column "{name}" of relation "{table}" already exists')
    return PgError("42P07", f'relation "{name}" already exists')


def target_column(match: re.Match[str], spots: Spots) -> PgError | None:
    """An INSERT's or UPDATE's column its table lacks (an UPDATE's error names no table)."""
    name, table = match["name"], match.groupdict().get("table") or spots.after("update")
    if table is None:
        return None
    return PgError(
        "42703",
        f'column "{name}" of relation "{table}" does not exist',
        position=spots.identifier(name),
    )


def duplicate_alias(match: re.Match[str], spots: Spots) -> PgError:
    return PgError("42712", f'table name "{match["name"]}" specified more than once')


def term(match: re.Match[str], spots: Spots) -> PgError | None:
    clause = match["clause"].split()[0].lower()
    found = spots.term(clause, int(match["count"]))
    if found is None:
        return None
    said = f"{clause.upper()} BY position {found[0]} is not in select list"
    return PgError("42P10", said, position=found[1])


def schema(match: re.Match[str], spots: Spots) -> PgError:
    name = match["name"]
    return PgError("3F000", f'schema "{name}" does not exist', position=spots.qualified(name))


def group_by(match: re.Match[str], spots: Spots) -> PgError:
    name = match["name"]
    table = spots.from_name()
    shown = f"{table}.{name}" if table else name
    return PgError(
        "42803",
        f'column "{shown}" must appear in the GROUP BY clause or be used in an aggregate function',
        position=spots.identifier(name),
    )


# -- functions and operators ---------------------------------------------------------------


def _is_operator(name: str) -> bool:
    return not re.search(r"\w", name)


def no_match(match: re.Match[str], spots: Spots) -> PgError:
    name, args = match["name"], [pg_type(a) for a in split_types(match["args"])]
    if _is_operator(name):
        return _no_operator(name, args, spots)
    return PgError(
        "42883",
        f"function {name}({', '.join(args)}) does not exist",
        hint=NO_FUNCTION_HINT,
        position=spots.function(name),
    )


def _no_operator(name: str, args: list[str], spots: Spots) -> PgError:
    if len(args) == 1:
        return PgError(
            "42883",
            f"operator does not exist: {name} {args[0]}",
            hint=NO_UNARY_OPERATOR_HINT,
            position=spots.operator(name, unary=True),
        )
    return PgError(
        "42883",
        f"operator does not exist: {args[0]} {name} {args[-1]}",
        hint=NO_OPERATOR_HINT,
        position=spots.operator(name),
    )


def membership(match: re.Match[str], spots: Spots) -> PgError:
    left, right = pg_type(match["left"]), pg_type(match["right"])
    return PgError(
        "42883",
        f"operator does not exist: {left} = {right}",
        hint=NO_OPERATOR_HINT,
        position=spots.membership(),
    )


def unknown_function(match: re.Match[str], spots: Spots) -> PgError:
    name = match["name"]
    args = spots.call_args(name)
    types = [literal_type(arg) for arg in args] if args is not None else []
    if args is not None and all(types):
        said = f"function {name}({', '.join(t or '' for t in types)}) does not exist"
    else:  # the argument types are not in the text (a column): no list rather than a wrong one
        said = f"function {name} does not exist"
    return PgError("42883", said, hint=NO_FUNCTION_HINT, position=spots.function(name))


# -- syntax and values ---------------------------------------------------------------------


def syntax(match: re.Match[str], spots: Spots) -> PgError:
    near = match["near"]
    if near == spots.last() and cut_short(spots.statement):  # DuckDB names the last token
        return syntax_end(match, spots)
    return PgError("42601", f'syntax error at or near "{near}"', position=spots.token(near))


def syntax_end(match: re.Match[str], spots: Spots) -> PgError:
    return PgError("42601", "syntax error at end of input", position=spots.end())


def division(match: re.Match[str], spots: Spots) -> PgError:
    return PgError("22012", "division by zero")


#: DuckDB's cast targets → the type PostgreSQL names in 'invalid input syntax for type ...'
_INPUT_TYPES = {"timestamp": "timestamp", "time": "time"}


def invalid_input(match: re.Match[str], spots: Spots) -> PgError:
    value = match["value"]
    kind = _INPUT_TYPES.get(match["type"].lower()) or pg_type(match["type"])
    code = "22007" if kind in ("date", "timestamp", "time") else "22P02"
    return PgError(
        code, f'invalid input syntax for type {kind}: "{value}"', position=spots.string(value)
    )


def out_of_range(match: re.Match[str], spots: Spots) -> PgError:
    return PgError("22003", f"{pg_type(match['type'])} out of range")
