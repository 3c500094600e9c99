"""Cold samples read as a scan DuckDB plans like a table, not through a function per block.

`relations.cold` reads the blocks with `wanka_block()`, an Arrow function that returns each
block's samples as one list, which the query then UNNESTs. That works on any wanka connection,
inside views and dynamic tables, but DuckDB cannot tell how many rows come out, builds lists it
only takes apart again, and plans the join with the series blind. bench/bench_cold_reads.py
measured the same day of one metric at 2,000 GPUs: native table 0.089 s, blocks through the
function 0.255 s, blocks through this scan 0.085 s.

The tiers' blocks (`wanka_tier_block()`, warehouse/tsdb/tier_blocks.py) are read the same
way: bench_history's month questions on the 1-hour tier, a day of 10,000 GPUs (290,094 rows of
one metric), took 0.14-0.18 s through the function and 0.04-0.08 s through scans.

So before a statement runs (`warehouse.query.executor`: every face, PromQL included), each
decode of blocks in its text is taken out (`bind`):

1. the decode's bounds (time, batches, series; SQL that may read the statement's CTEs) and the
   blocks its statistics keep are read, on the statement's cursor: ids and compressed bytes;
2. a scan of those blocks is registered on the cursor (`_Scan`: a DuckDB Arrow source whose
   every stream decodes block after block, keeping only the samples within the bounds, and
   which tells the planner how many rows it holds at most);
3. the decode is replaced by a read of the scan, guarded: the statement checks, on its own
   snapshot, that the blocks its statistics keep are the same set (count and sum of the ids,
   which only grow: any block added or dropped changes one of them). If a compaction or a
   retention pass committed in between, the statement fails with `MOVED`, and the executor
   runs it again, never reading a sample twice or missing one.

A statement is left as it is (the function reads the blocks) when it has positional parameters
(named ones are given to the reads of its bounds), when a decode's bounds cannot be read on
their own (they name a column of the outer query), or when its blocks hold more than `BUDGET`
samples: the compressed bytes are held in memory while the statement runs, about one byte a
sample.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from warehouse.kernel import blocks
from warehouse.kernel.ahead import ahead
from warehouse.tsdb import relations, tier_blocks

try:  # DuckDB 2.0's Arrow source protocol: a Python object scanned as often as asked
    from duckdb._sources.arrow import ArrowScanSource
except ImportError:  # pragma: no cover - then the function reads every block
    ArrowScanSource = None  # type: ignore[assignment,misc]

#: Whether this DuckDB lets a scan be registered as a Python source.
AVAILABLE = ArrowScanSource is not None and hasattr(
    duckdb.DuckDBPyConnection, "_register_arrow_source"
)
#: The most samples a statement's blocks may hold for it to be read through scans.
BUDGET = 200_000_000
#: Blocks decoded ahead of the one DuckDB reads, per scan (`warehouse.kernel.ahead`).
AHEAD = 2
#: The words of the error a statement raises when its blocks changed after `bind` read them.
MOVED = "the compressed telemetry blocks changed as this query started"


@dataclass(frozen=True)
class _Kind:
    """A kind of block a decode reads: its shape, its table, the column that counts its rows,
    and what identifies the set of blocks a statement keeps (summed in its guard)."""

    shape: blocks.Shape
    table: str
    rows: str
    identity: str

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(
            [("series_id", pa.int32()), *((n, kind) for n, kind, _ in self.shape.columns)]
        )


#: Samples' blocks have ids, which only grow; a tier's blocks are put back and made again
#: when a fold changes their rows (warehouse/tsdb/tier_blocks.py), so their bytes say.
_KINDS = {
    blocks.SAMPLES.function: _Kind(blocks.SAMPLES, relations.BLOCKS, "samples", "block_id"),
    blocks.TIERS.function: _Kind(blocks.TIERS, tier_blocks.TABLE, "rows", "hash(data)"),
}
SCHEMA = _KINDS[blocks.FUNCTION].schema
_WITH = re.compile(r"\s*WITH\s", re.IGNORECASE)
_BODY = re.compile(r"SELECT\b|FROM\b", re.IGNORECASE)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_START = re.compile(rf"SELECT\s+UNNEST\s*\(\s*(?:{'|'.join(_KINDS)})\s*\(", re.IGNORECASE)
#: The scans registered on each cursor, dropped at its next statement.
_HELD: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, list[str]] = weakref.WeakKeyDictionary()


@dataclass
class Bound:
    """A statement's text with its decodes replaced by scans, and the scans' names."""

    sql: str
    names: list[str]


def bind(
    cur: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> Bound | None:
    """`sql` with each decode of blocks read through a scan registered on `cur`; None when it
    has none, or one of them cannot be (see the module's docstring). `params`: the statement's
    named parameters, which its decodes' bounds may use (`$from`)."""
    release(cur)
    if not AVAILABLE or not any(function in sql.lower() for function in _KINDS):
        return None
    spans = list(_decodes(sql))
    if not spans:
        return None
    planned: list[_Planned] = []
    try:
        for a, b in spans:
            left = BUDGET - sum(p.samples for p in planned)
            planned.append(_plan(cur, _ctes(sql, a), sql[a:b], left, params or {}))
    except (duckdb.Error, SqlglotError, ValueError):  # _OverBudget too
        return None
    names, parts, at = [], [], 0
    for index, ((a, b), found) in enumerate(zip(spans, planned, strict=True)):
        name = f"_wanka_cold_{index}"
        cur._register_arrow_source(name, _Scan(found))
        names.append(name)
        parts += [sql[at:a], found.read(name)]
        at = b
    _HELD[cur] = names
    return Bound("".join([*parts, sql[at:]]), names)


def release(cur: duckdb.DuckDBPyConnection) -> None:
    """Drop the scans a previous statement registered on `cur` (and the bytes they hold)."""
    for name in _HELD.pop(cur, []):
        with contextlib.suppress(duckdb.Error):
            cur.unregister(name)


@dataclass
class _Planned:
    """One decode: its bounds as values, the blocks it reads, and its SQL's block filter."""

    kind: _Kind
    bounds: list[Any]
    data: list[bytes]
    samples: int
    count: int
    id_sum: int
    where: str

    def read(self, name: str) -> str:
        guard = (
            f"(SELECT CASE WHEN count(*) = {self.count} AND coalesce(sum({self.kind.identity}), "
            f"0) = {self.id_sum} THEN true ELSE error('{MOVED}') END "
            f"FROM {self.kind.table}{self.where})"
        )
        return f"SELECT {', '.join(self.kind.schema.names)} FROM {name} WHERE {guard}"


def _decodes(sql: str) -> Iterator[tuple[int, int]]:
    """The spans of `sql` that are a decode of blocks: from its SELECT to the parenthesis that
    closes the query around it (or the end)."""
    for match in _START.finditer(sql):
        end = next((at for at, depth, _ in _scan(sql, match.start()) if depth < 0), len(sql))
        yield match.start(), end


def _scan(sql: str, start: int = 0) -> Iterator[tuple[int, int, str]]:
    """Each character of `sql` from `start` outside quotes: its position, the depth of
    parentheses after it (relative to `start`), itself."""
    depth, quote = 0, ""
    for at in range(start, len(sql)):
        char = sql[at]
        if quote:
            quote = "" if char == quote else quote
            continue
        if char in "'\"":
            quote = char
            continue
        depth += (char == "(") - (char == ")")
        yield at, depth, char


def _ctes(sql: str, before: int) -> str:
    """The WITH clause of `sql`'s CTEs that are whole before position `before` ('' when none):
    all of them when `before` is in the statement's body, those before the CTE `before` is in
    when it is in one."""
    head = _WITH.match(sql)
    if head is None:
        return ""
    cut = None
    for at, depth, char in _scan(sql[:before], head.end()):
        if depth == 0 and char == ",":
            cut = at
        elif depth == 0 and _BODY.match(sql, at):
            return sql[:at]
    return f"{sql[:cut]} " if cut is not None else ""


class _OverBudget(ValueError):
    """The blocks a statement needs hold more samples than `BUDGET`."""


def _plan(
    cur: duckdb.DuckDBPyConnection, ctes: str, decode: str, budget: int, params: dict[str, Any]
) -> _Planned:
    """Read a decode's bounds and the blocks it keeps, on `cur`, with those of the statement's
    `params` they name (_OverBudget when they hold more than `budget` samples)."""
    select = sqlglot.parse_one(decode, read="duckdb")
    call = select.find(exp.Anonymous)
    kind = _KINDS.get(call.name.lower()) if call is not None else None
    if call is None or kind is None or len(call.expressions) != len(kind.shape.params):
        raise ValueError("not a decode of blocks")
    where = select.args.get("where")
    where_sql = f" {where.sql(dialect='duckdb')}" if where is not None else ""
    args = [a.sql(dialect="duckdb") for a in call.expressions[1:]]
    bounds_sql = f"{ctes}SELECT {', '.join(args)}"
    [given] = cur.sql(bounds_sql, params=_named(params, bounds_sql)).fetchall()
    # the blocks, by the bounds just read: the series wanted once, as a parameter
    wanted = args[-1] if args[-1] != "NULL" and args[-1] in where_sql else None
    kept = where_sql.replace(wanted, f"${_SERIES}") if wanted else where_sql
    values = {**(_named(params, kept) or {}), **({_SERIES: given[4]} if wanted else {})}
    [(held,)] = cur.sql(
        f"SELECT coalesce(sum({kind.rows}), 0) FROM {kind.table}{kept}", params=values or None
    ).fetchall()
    if held > budget:  # known from the statistics, before any block's bytes are read
        raise _OverBudget(f"the blocks hold {held:,} samples")
    found = cur.sql(
        f"SELECT {kind.identity}, data, {kind.rows} FROM {kind.table}{kept}",
        params=values or None,
    ).fetchall()
    bounds = [_micros(v) for v in given[:2]] + list(given[2:-1])
    bounds.append(None if given[-1] is None else np.asarray(given[-1], dtype=np.int32))
    return _Planned(
        kind,
        bounds,
        [bytes(d) for _, d, _ in found],
        sum(int(n) for _, _, n in found),
        len(found),
        sum(int(i) for i, _, _ in found),
        where_sql,
    )


#: The parameter that carries the series a decode wants into the read of its blocks.
_SERIES = "wanka_series_wanted"
_PARAMETER = re.compile(r"\$([A-Za-z_]\w*)")


def _named(params: dict[str, Any], sql: str) -> dict[str, Any] | None:
    """Those of `params` that `sql` names (DuckDB refuses one it does not), None for none."""
    found = {name: params[name] for name in _PARAMETER.findall(sql) if name in params}
    return found or None


def _micros(value: object) -> int | None:
    """A time bound as µs since the epoch, as blocks store times."""
    if value is None:
        return None
    if isinstance(value, datetime) and value.tzinfo is not None:
        return (value - _EPOCH) // timedelta(microseconds=1)
    raise ValueError(f"a time bound of blocks is {value!r}")


class _Scan(ArrowScanSource):
    """The samples of some blocks within bounds, decoded block by block at every stream."""

    schema_is_stable = True

    def __init__(self, planned: _Planned) -> None:
        super().__init__(planned)
        self.planned = planned

    def __arrow_c_schema__(self) -> object:
        return self.planned.kind.schema.__arrow_c_schema__()

    def rows(self) -> int | None:
        """At most the blocks' samples: what the planner sizes its joins by."""
        return self.planned.samples

    def stream(self, columns: Sequence[int] | None, filters: Sequence[Any]) -> tuple[object, bool]:
        whole = self.planned.kind.schema
        chosen = list(range(len(whole))) if columns is None else list(columns)
        schema = pa.schema([whole.field(i) for i in chosen])
        reader = pa.RecordBatchReader.from_batches(schema, self._batches(schema, chosen))
        return reader.__arrow_c_stream__(), columns is not None

    def _batches(
        self, schema: pa.Schema, chosen: list[int]
    ) -> Generator[pa.RecordBatch, None, None]:
        """The blocks' batches in order, each decoded on the decoder threads while DuckDB
        works on the one before (pcodec and numpy let go of the GIL): at most `AHEAD`
        decoded ahead, and those not taken are cancelled when the scan stops early."""
        return ahead(self.planned.data, lambda block: self._batch(block, schema, chosen), AHEAD)

    def _batch(self, data: bytes, schema: pa.Schema, chosen: list[int]) -> pa.RecordBatch:
        only = [i - 1 for i in chosen if i > 0]  # the block's columns come after series_id
        ids, columns, keep = blocks.read(self.planned.kind.shape, data, self.planned.bounds, only)
        found = [(ids, None), *columns]
        arrays = []
        for i in chosen:
            values, mask = found[i]
            if keep is not None:
                values, mask = values[keep], None if mask is None else mask[keep]
            kind = schema.field(chosen.index(i)).type
            if pa.types.is_timestamp(kind):
                arrays.append(pa.array(values, pa.int64(), mask=mask).view(kind))
            else:
                arrays.append(pa.array(values, kind, mask=mask))
        return pa.record_batch(arrays, schema=schema)
