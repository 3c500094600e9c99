"""A remote_write body (snappy block format around a protobuf WriteRequest) into rows.

Everything a request holds is checked before anything is stored, so a bad request is refused
whole (HTTP 400: Prometheus does not retry it) and nothing of it is half-written:

- the body: snappy's block format (not the framed one), at most `Limits.max_decoded_bytes`
  once decompressed (read from the block's header before inflating it);
- the message: a WriteRequest; at most `Limits.max_series` series and `Limits.max_samples`
  samples; every series with a `__name__`, label names valid Prometheus names, no name twice,
  names and values within `Limits.max_label_bytes`;
- timestamps: from `Limits.max_age` before the server's clock to `Limits.max_ahead` after it.

Values are kept as sent, NaN and ±Inf included, except Prometheus's staleness marker (the NaN
with bits 0x7ff0000000000002), which ends a series: it goes to `stale`, not to the values.
A series with the same labels twice in one request, or a sample twice, is stored once (the
first).
"""

from __future__ import annotations

from datetime import UTC, datetime

import cramjam
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.message import DecodeError

from warehouse.remote_write import fastpath
from warehouse.remote_write.messages import RawWriteRequest
from warehouse.remote_write.rows import (
    BadRequest,
    Decoded,
    Limits,
    Rows,
    Series,
    SeriesCache,
    check_series_count,
)


def decompress(body: bytes, limits: Limits) -> bytes:
    """Inflate a snappy block, refusing one that says it inflates past the limit."""
    size, used = _uvarint(body)
    if used == 0:
        raise BadRequest("the body is not snappy-compressed (block format): no length header")
    if size > limits.max_decoded_bytes:
        raise BadRequest(
            f"the body inflates to {size:,} bytes; the limit is {limits.max_decoded_bytes:,}"
        )
    try:
        return bytes(cramjam.snappy.decompress_raw(body))
    except cramjam.DecompressionError as error:
        raise BadRequest(f"the body is not valid snappy (block format): {error}") from None


def _uvarint(data: bytes) -> tuple[int, int]:
    """The unsigned varint at the start of `data` and its length in bytes (0: none)."""
    value = shift = 0
    for i, byte in enumerate(data[:10]):
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i + 1
        shift += 7
    return 0, 0


def decode(body: bytes, cache: SeriesCache, limits: Limits, now: datetime | None = None) -> Decoded:
    """The rows of a compressed remote_write body; raises BadRequest naming what is wrong."""
    raw = decompress(body, limits)
    now = now or datetime.now(UTC)
    window = (_ms(now - limits.max_age), _ms(now + limits.max_ahead))
    fast = fastpath.decode_fast(raw, Rows(cache, limits, *window))
    if fast is not None:
        return fast
    try:
        request = RawWriteRequest.FromString(raw)
    except DecodeError as error:
        raise BadRequest(f"the body is not a Remote-Write 1.0 WriteRequest: {error}") from None
    series = request.timeseries
    check_series_count(len(series), limits)
    rows = Rows(cache, limits, *window)
    for index, one in enumerate(series):
        rows.add(index, one)
    return rows.finish()


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def merge(parts: list[Decoded]) -> Decoded:
    """Several requests' rows as one (one transaction stores them all): series ids offset."""
    series, samples, stale, offset = [], [], [], 0
    for part in parts:
        shift = pa.scalar(offset, pa.int64())
        series.append(part.series.set_column(0, "sid", pc.add(part.series["sid"], shift)))
        samples.append(part.samples.set_column(0, "sid", pc.add(part.samples["sid"], shift)))
        stale.append(part.stale.set_column(0, "sid", pc.add(part.stale["sid"], shift)))
        offset += part.series.num_rows
    return Decoded(
        pa.concat_tables(series),
        pa.concat_tables(samples),
        pa.concat_tables(stale),
        sum(p.received for p in parts),
        sum(p.histograms for p in parts),
        requests=sum(p.requests for p in parts),
        keys=_keys(parts),
    )


def _keys(parts: list[Decoded]) -> list[Series] | None:
    keys: list[Series] = []
    for part in parts:
        if part.keys is None:
            return None
        keys += part.keys
    return keys
