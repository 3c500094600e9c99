"""Casts PostgreSQL clients write that DuckDB lacks: `::regclass`, `::regtype`, `::oid`,
`::name`, `::"char"`, `pg_catalog.`-qualified type names, `'\\x..'::bytea`."""

from __future__ import annotations

from sqlglot import exp

from service.pgwire.compat.objects import COMPAT_SCHEMA

_PLAIN_TYPES = {
    "name": "VARCHAR",
    "char": "VARCHAR",
    "bpchar": "VARCHAR",
    "text": "VARCHAR",
    "oid": "UINTEGER",
    "xid": "BIGINT",
    "int2vector": "SMALLINT[]",
    "oidvector": "BIGINT[]",
    "pg_node_tree": "VARCHAR",
    "aclitem": "VARCHAR",
    "regproc": "VARCHAR",
    "regprocedure": "VARCHAR",
    "regoper": "VARCHAR",
    "regnamespace": "VARCHAR",
    "regrole": "VARCHAR",
    "regconfig": "VARCHAR",
    "anyarray": "VARCHAR[]",
    "cstring": "VARCHAR",
    "information_schema.sql_identifier": "VARCHAR",
    "sql_identifier": "VARCHAR",
    "cardinal_number": "INTEGER",
    "character_data": "VARCHAR",
    "yes_or_no": "VARCHAR",
}


def compat_call(name: str, args: list[exp.Expr]) -> exp.Expr:
    """`memory.pg_compat.name(args)`."""
    call = exp.Anonymous(this=name, expressions=args)
    prefix = exp.Dot(this=exp.to_identifier("memory"), expression=exp.to_identifier(COMPAT_SCHEMA))
    return exp.Dot(this=prefix, expression=call)


def cast(node: exp.Cast) -> exp.Expr:
    target = node.to
    name = _type_name(target)
    if name is None:
        return node
    value = node.this
    named = isinstance(value, exp.Parameter) or (
        isinstance(value, exp.Literal) and value.is_string
    )  # a name to look up; anything else is an oid to print
    if name == "regclass":
        if named:
            return compat_call("regclass_oid", [value])
        return compat_call("regclass_name", [value])
    if name == "regtype":
        if named:
            return compat_call("regtype_oid", [value])
        return compat_call("format_type", [value, exp.null()])
    if name in _PLAIN_TYPES:
        return exp.cast(value, _PLAIN_TYPES[name], dialect="duckdb")
    if name == "bytea" and isinstance(value, exp.Literal) and value.is_string:
        text = value.this
        if text.startswith("\\x"):  # PostgreSQL's hex format; DuckDB would read '\x00' + text
            return exp.Anonymous(this="from_hex", expressions=[exp.Literal.string(text[2:])])
    if isinstance(target, exp.DataType) and target.this == exp.DType.USERDEFINED:
        try:  # pg_catalog.int2, pg_catalog.text[]: the type without its schema
            return exp.cast(value, exp.DataType.build(name, dialect="postgres"), dialect="duckdb")
        except Exception:
            return node
    return node


def qualified_type(node: exp.DataType) -> exp.Expr:
    """`pg_catalog.int2` inside `int2[]`: the type without its schema."""
    name = _type_name(node)
    if name is None or name in _PLAIN_TYPES or name in ("regclass", "regtype"):
        return node
    try:
        return exp.DataType.build(name, dialect="postgres")
    except Exception:
        return node


def _type_name(target: exp.Expr) -> str | None:
    if isinstance(target, exp.ObjectIdentifier):
        return target.name.lower()
    if isinstance(target, exp.DataType) and target.this in (exp.DType.VARBINARY, exp.DType.BINARY):
        return "bytea"
    if isinstance(target, exp.DataType):
        kind = target.args.get("kind")
        if target.this == exp.DType.USERDEFINED and kind is not None:
            text: str = kind.sql().replace('"', "").lower()
            return text.removeprefix("pg_catalog.")
        if target.this == exp.DType.NAME:
            return "name"
    return None
