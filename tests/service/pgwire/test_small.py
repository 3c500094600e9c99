"""Small batches are framed in Python: the same bytes as the Arrow kernels give, for any values."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from service.pgwire import rows, small
from service.pgwire import types as t
from tests.conftest import examples

UTC = dt.UTC

SCALARS: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "int8": (pa.int8(), st.integers(-(2**7), 2**7 - 1)),
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "uint32": (pa.uint32(), st.integers(0, 2**32 - 1)),
    "bool": (pa.bool_(), st.booleans()),
    "text": (pa.string(), st.text(max_size=12)),
    "float64": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
    "float32": (pa.float32(), st.floats(width=32, allow_nan=True, allow_infinity=True)),
    "decimal": (
        pa.decimal128(18, 7),
        st.decimals(min_value=-(10**10), max_value=10**10, places=7, allow_nan=False),
    ),
    "date": (pa.date32(), st.dates()),
    "timestamp": (pa.timestamp("us"), st.datetimes()),
    "timestamp_ms": (pa.timestamp("ms"), st.datetimes().map(lambda d: d.replace(microsecond=0))),
    "timestamptz": (pa.timestamp("us", tz="UTC"), st.datetimes(timezones=st.just(UTC))),
    "interval": (pa.month_day_nano_interval(), st.just(None)),  # left to textenc
}


@st.composite
def batches(draw: st.DrawFn) -> pa.RecordBatch:
    names = draw(st.lists(st.sampled_from(sorted(SCALARS)), min_size=1, max_size=4))
    count = draw(st.integers(1, small.SMALL_ROWS))
    columns = []
    for name in names:
        kind, values = SCALARS[name]
        drawn = draw(st.lists(st.one_of(st.none(), values), min_size=count, max_size=count))
        if name == "decimal":
            drawn = [None if v is None else decimal.Decimal(v) for v in drawn]
        columns.append(pa.array(drawn, kind))
    return pa.record_batch(columns, names=[f"c{i}" for i in range(len(names))])


def _arrow_path(batch: pa.RecordBatch, formats: list[int]) -> bytes:
    oids = [t.pg_type(f.type).oid for f in batch.schema]
    block: bytes = rows._block(batch, oids, rows.encoders(formats)).to_pybytes()
    return block


@settings(max_examples=examples(3))
@given(batches())
def test_small_batches_frame_the_bytes_the_arrow_kernels_do(batch: pa.RecordBatch) -> None:
    oids = [t.pg_type(f.type).oid for f in batch.schema]
    formats = [0] * batch.num_columns
    fast = small.data_rows(batch, oids, formats, rows.encoders(formats)).to_pybytes()
    assert fast == _arrow_path(batch, formats)


@settings(max_examples=examples(0.5))
@given(batches())
def test_binary_results_use_the_same_encoders(batch: pa.RecordBatch) -> None:
    oids = [t.pg_type(f.type).oid for f in batch.schema]
    formats = [1] * batch.num_columns
    fast = small.data_rows(batch, oids, formats, rows.encoders(formats)).to_pybytes()
    assert fast == _arrow_path(batch, formats)


def test_data_rows_takes_the_small_path_up_to_its_size_only() -> None:
    few = pa.record_batch([pa.array(range(small.SMALL_ROWS))], names=["i"])
    many = pa.record_batch([pa.array(range(small.SMALL_ROWS + 1))], names=["i"])
    oid = [t.pg_type(pa.int64()).oid]
    assert b"".join(b.to_pybytes() for b in rows.data_rows(few, oid, [0])) == _arrow_path(few, [0])
    assert b"".join(b.to_pybytes() for b in rows.data_rows(many, oid, [0])) == _arrow_path(
        many, [0]
    )
    assert rows.data_rows(few.slice(0, 0), oid, [0]) == []
