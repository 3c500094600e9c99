"""The Remote-Write 1.0 messages (prometheus/prometheus `prompb/remote.proto`, `types.proto`),
built from their descriptors at import: no generated code, no protoc.

    WriteRequest { repeated TimeSeries timeseries = 1; reserved 2;
                   repeated MetricMetadata metadata = 3; }
    TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2;
                   repeated Exemplar exemplars = 3; repeated Histogram histograms = 4; }
    Label        { string name = 1; string value = 2; }
    Sample       { double value = 1; int64 timestamp = 2; }   // ms since 1970
    Exemplar     { repeated Label labels = 1; double value = 2; int64 timestamp = 3; }
    MetricMetadata { MetricType type = 1; string metric_family_name = 2; string help = 4;
                     string unit = 5; }

`RawWriteRequest` reads the same bytes with each series' labels left as the raw bytes of their
Label messages (wire-compatible: both are length-delimited): a tuple of them is the series'
key, built in C, and a label set is decoded only the first time it is seen.

Only what wanka reads is declared: exemplars (3) and metadata (3 of WriteRequest) are fields
upb skips, and native histograms (4) stay raw bytes, counted (`Decoded.histograms`), not parsed.
`WriteRequest` builds requests (tests, benches); `RawWriteRequest` decodes them, and
`SeriesBytes` leaves every series as raw bytes for the vectorised path (`fastpath`).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_REPEATED, _ONE = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL
_STRING, _DOUBLE, _INT64, _BYTES = _F.TYPE_STRING, _F.TYPE_DOUBLE, _F.TYPE_INT64, _F.TYPE_BYTES

#: message -> its fields (name, number, repeated?, type: a scalar type or a message name).
_MESSAGES: dict[str, list[tuple[str, int, bool, int | str]]] = {
    "Label": [("name", 1, False, _STRING), ("value", 2, False, _STRING)],
    "Sample": [("value", 1, False, _DOUBLE), ("timestamp", 2, False, _INT64)],
    "TimeSeries": [
        ("labels", 1, True, "Label"),
        ("samples", 2, True, "Sample"),
        ("histograms", 4, True, _BYTES),
    ],
    "WriteRequest": [("timeseries", 1, True, "TimeSeries")],
    "RawTimeSeries": [
        ("labels", 1, True, _BYTES),
        ("samples", 2, True, "Sample"),
        ("histograms", 4, True, _BYTES),
    ],
    "RawWriteRequest": [("timeseries", 1, True, "RawTimeSeries")],
    "SeriesBytes": [("timeseries", 1, True, _BYTES)],
}


def _build() -> dict[str, Any]:
    file = descriptor_pb2.FileDescriptorProto(
        name="wanka/prompb.proto", package="prometheus", syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = file.message_type.add(name=name)
        for field_name, number, repeated, kind in fields:
            field = message.field.add(
                name=field_name, number=number, label=_REPEATED if repeated else _ONE
            )
            if isinstance(kind, str):
                field.type, field.type_name = _F.TYPE_MESSAGE, f".prometheus.{kind}"
            else:
                field.type = kind
    built = descriptor_pool.DescriptorPool().Add(file)
    return {
        name: message_factory.GetMessageClass(built.message_types_by_name[name])
        for name in _MESSAGES
    }


_CLASSES = _build()
WriteRequest: Any = _CLASSES["WriteRequest"]
RawWriteRequest: Any = _CLASSES["RawWriteRequest"]
RawTimeSeries: Any = _CLASSES["RawTimeSeries"]
SeriesBytes: Any = _CLASSES["SeriesBytes"]  # each series left as its raw bytes (fastpath.py)
Label: Any = _CLASSES["Label"]
