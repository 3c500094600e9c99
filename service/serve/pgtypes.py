"""PostgreSQL's names for the types DuckDB's errors (and a client's casts) name.

PostgreSQL says `operator does not exist: text + integer` where DuckDB says
`+(VARCHAR, INTEGER_LITERAL)`; `service.serve.pgerror` words its messages with these names.
"""

from __future__ import annotations

import re

from sqlglot.tokenizer_core import Token, TokenType

#: DuckDB's type names (and PostgreSQL's spellings in a cast) → PostgreSQL's names in messages.
PG_TYPES = {
    "integer": "integer",
    "integer_literal": "integer",
    "int": "integer",
    "int4": "integer",
    "int32": "integer",
    "bigint": "bigint",
    "int8": "bigint",
    "int64": "bigint",
    "smallint": "smallint",
    "int2": "smallint",
    "int16": "smallint",
    "tinyint": "smallint",
    "hugeint": "numeric",
    "decimal": "numeric",
    "numeric": "numeric",
    "double": "double precision",
    "float8": "double precision",
    "float": "real",
    "float4": "real",
    "real": "real",
    "varchar": "text",
    "text": "text",
    "string_literal": "unknown",
    "null": "unknown",
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "time": "time without time zone",
    "timestamp": "timestamp without time zone",
    "timestamptz": "timestamp with time zone",
    "timestamp with time zone": "timestamp with time zone",
    "interval": "interval",
    "blob": "bytea",
    "bytea": "bytea",
    "uuid": "uuid",
    "json": "json",
    "jsonb": "jsonb",
}


def pg_type(duckdb_type: str) -> str:
    """PostgreSQL's name for a DuckDB type.

    >>> pg_type("DECIMAL(18,3)"), pg_type("VARCHAR[]"), pg_type("STRING_LITERAL")
    ('numeric', 'text[]', 'unknown')
    """
    name = duckdb_type.strip()
    if name.endswith("[]"):
        return pg_type(name[:-2]) + "[]"
    base = re.sub(r"\(.*\)$", "", name).strip().lower()
    return PG_TYPES.get(base, base)


def split_types(args: str) -> list[str]:
    """`INTEGER, DECIMAL(18,3)` → its types (commas inside parentheses kept)."""
    types, depth, current = [], 0, ""
    for char in args:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            types.append(current)
            current = ""
        else:
            current += char
    return [t.strip() for t in [*types, current] if t.strip()]


def literal_type(arg: list[Token]) -> str | None:
    """PostgreSQL's type of a literal argument as written (None: not a literal)."""
    if len(arg) == 3 and arg[1].token_type == TokenType.DCOLON:
        return PG_TYPES.get(arg[2].text.lower())
    if len(arg) != 1:
        return None
    token = arg[0]
    if token.token_type == TokenType.NUMBER:
        if not token.text.isdigit():
            return "numeric"
        value = int(token.text)
        return "integer" if value < 2**31 else "bigint" if value < 2**63 else "numeric"
    kinds = {TokenType.STRING: "unknown", TokenType.NULL: "unknown"}
    kinds |= {TokenType.TRUE: "boolean", TokenType.FALSE: "boolean"}
    return kinds.get(token.token_type)
