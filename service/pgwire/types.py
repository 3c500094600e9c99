"""PostgreSQL type OIDs and how Arrow result columns map onto them."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

BOOL = 16
BYTEA = 17
CHAR = 18
NAME = 19
INT8 = 20
INT2 = 21
INT4 = 23
REGPROC = 24
TEXT = 25
OID = 26
JSON = 114
FLOAT4 = 700
FLOAT8 = 701
UNKNOWN = 705
BPCHAR = 1042
VARCHAR = 1043
DATE = 1082
TIME = 1083
TIMESTAMP = 1114
TIMESTAMPTZ = 1184
INTERVAL = 1186
NUMERIC = 1700
REGCLASS = 2205
REGTYPE = 2206
UUID = 2950
JSONB = 3802

#: element type OID -> array type OID
ARRAY_OF: dict[int, int] = {
    BOOL: 1000,
    BYTEA: 1001,
    CHAR: 1002,
    NAME: 1003,
    INT2: 1005,
    INT4: 1007,
    TEXT: 1009,
    VARCHAR: 1015,
    INT8: 1016,
    FLOAT4: 1021,
    FLOAT8: 1022,
    OID: 1028,
    TIMESTAMP: 1115,
    DATE: 1182,
    TIME: 1183,
    TIMESTAMPTZ: 1185,
    INTERVAL: 1187,
    NUMERIC: 1231,
    UUID: 2951,
    JSON: 199,
    JSONB: 3807,
}
ELEMENT_OF: dict[int, int] = {array: element for element, array in ARRAY_OF.items()}

#: fixed widths (pg_type.typlen); everything else is variable (-1)
TYPE_SIZE: dict[int, int] = {
    BOOL: 1,
    INT2: 2,
    INT4: 4,
    INT8: 8,
    OID: 4,
    FLOAT4: 4,
    FLOAT8: 8,
    DATE: 4,
    TIME: 8,
    TIMESTAMP: 8,
    TIMESTAMPTZ: 8,
    INTERVAL: 16,
    UUID: 16,
    CHAR: 1,
    NAME: 64,
}

#: names a client may cast a parameter to, as DuckDB spells the type
DUCKDB_TYPE: dict[int, str] = {
    BOOL: "BOOLEAN",
    BYTEA: "BLOB",
    INT8: "BIGINT",
    INT2: "SMALLINT",
    INT4: "INTEGER",
    OID: "UINTEGER",
    TEXT: "VARCHAR",
    VARCHAR: "VARCHAR",
    BPCHAR: "VARCHAR",
    NAME: "VARCHAR",
    CHAR: "VARCHAR",
    JSON: "JSON",
    JSONB: "JSON",
    FLOAT4: "FLOAT",
    FLOAT8: "DOUBLE",
    DATE: "DATE",
    TIME: "TIME",
    TIMESTAMP: "TIMESTAMP",
    TIMESTAMPTZ: "TIMESTAMPTZ",
    INTERVAL: "INTERVAL",
    NUMERIC: "DECIMAL(38, 10)",
    UUID: "UUID",
}


@dataclass(frozen=True)
class PgType:
    """The PostgreSQL face of one Arrow column."""

    oid: int
    size: int = -1
    modifier: int = -1


def pg_type(arrow: pa.DataType) -> PgType:
    """The PostgreSQL type a client sees for an Arrow column type.

    >>> pg_type(pa.int64())
    PgType(oid=20, size=8, modifier=-1)
    >>> pg_type(pa.decimal128(10, 2)).modifier
    655366
    >>> pg_type(pa.list_(pa.float64())).oid
    1022
    >>> pg_type(pa.uint32())  # the catalog's oid columns are UINTEGER
    PgType(oid=26, size=4, modifier=-1)
    """
    oid = _scalar_oid(arrow)
    if oid is None:
        if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
            element = pg_type(arrow.value_type).oid
            return PgType(ARRAY_OF.get(element, ARRAY_OF[TEXT]))
        return PgType(JSON) if _is_nested(arrow) else PgType(TEXT)
    if oid == NUMERIC and pa.types.is_decimal(arrow):
        return PgType(NUMERIC, -1, ((arrow.precision << 16) | arrow.scale) + 4)
    return PgType(oid, TYPE_SIZE.get(oid, -1))


def declared(oid: int) -> PgType:
    """The face of a column whose type the statement declares (name, "char")."""
    return PgType(oid, TYPE_SIZE.get(oid, -1))


def is_text(arrow: pa.DataType) -> bool:
    """Whether an Arrow column holds strings (which a declared name or "char" type may label)."""
    return bool(
        pa.types.is_string(arrow)
        or pa.types.is_large_string(arrow)
        or pa.types.is_string_view(arrow)
    )


def _is_nested(arrow: pa.DataType) -> bool:
    return bool(pa.types.is_struct(arrow) or pa.types.is_map(arrow) or pa.types.is_union(arrow))


def _scalar_oid(arrow: pa.DataType) -> int | None:
    if isinstance(arrow, pa.BaseExtensionType):
        if arrow.extension_name in ("arrow.uuid", "uuid"):
            return UUID
        if arrow.extension_name in ("arrow.json", "json"):
            return JSON
        return _scalar_oid(arrow.storage_type)
    checks: list[tuple[bool, int]] = [
        (pa.types.is_boolean(arrow), BOOL),
        (arrow in (pa.int8(), pa.int16(), pa.uint8()), INT2),
        (arrow in (pa.int32(), pa.uint16()), INT4),
        (arrow == pa.uint32(), OID),  # DuckDB's UINTEGER: PostgreSQL's only unsigned type
        (arrow == pa.int64(), INT8),
        (arrow == pa.uint64() or pa.types.is_decimal(arrow), NUMERIC),
        (arrow in (pa.float16(), pa.float32()), FLOAT4),
        (arrow == pa.float64(), FLOAT8),
        (pa.types.is_string(arrow) or pa.types.is_large_string(arrow), TEXT),
        (pa.types.is_string_view(arrow) or pa.types.is_null(arrow), TEXT),
        (pa.types.is_binary(arrow) or pa.types.is_large_binary(arrow), BYTEA),
        (pa.types.is_fixed_size_binary(arrow) or pa.types.is_binary_view(arrow), BYTEA),
        (pa.types.is_date(arrow), DATE),
        (pa.types.is_time(arrow), TIME),
        (pa.types.is_interval(arrow) or pa.types.is_duration(arrow), INTERVAL),
    ]
    for matched, oid in checks:
        if matched:
            return oid
    if pa.types.is_timestamp(arrow):
        return TIMESTAMPTZ if arrow.tz else TIMESTAMP
    return None
