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

Native histograms (field 4) are kept as raw bytes: wanka stores float samples, and counts the
histograms it cannot store (`Decoded.histograms`) instead of parsing them.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto


def _message(
    file: descriptor_pb2.FileDescriptorProto,
    name: str,
    fields: list[tuple[str, int, int, int, str]],
) -> None:
    """Add message `name` with fields (name, number, label, type, type name) to `file`."""
    message = file.message_type.add(name=name)
    for field_name, number, label, kind, type_name in fields:
        field = message.field.add(name=field_name, number=number, label=label, type=kind)
        if type_name:
            field.type_name = type_name


def _build() -> dict[str, Any]:
    file = descriptor_pb2.FileDescriptorProto(
        name="wanka/prompb.proto", package="prometheus", syntax="proto3"
    )
    rep, opt = _F.LABEL_REPEATED, _F.LABEL_OPTIONAL
    _message(
        file, "Label", [("name", 1, opt, _F.TYPE_STRING, ""), ("value", 2, opt, _F.TYPE_STRING, "")]
    )
    _message(
        file,
        "Sample",
        [("value", 1, opt, _F.TYPE_DOUBLE, ""), ("timestamp", 2, opt, _F.TYPE_INT64, "")],
    )
    _message(
        file,
        "Exemplar",
        [
            ("labels", 1, rep, _F.TYPE_MESSAGE, ".prometheus.Label"),
            ("value", 2, opt, _F.TYPE_DOUBLE, ""),
            ("timestamp", 3, opt, _F.TYPE_INT64, ""),
        ],
    )
    _message(
        file,
        "TimeSeries",
        [
            ("labels", 1, rep, _F.TYPE_MESSAGE, ".prometheus.Label"),
            ("samples", 2, rep, _F.TYPE_MESSAGE, ".prometheus.Sample"),
            ("exemplars", 3, rep, _F.TYPE_MESSAGE, ".prometheus.Exemplar"),
            ("histograms", 4, rep, _F.TYPE_BYTES, ""),
        ],
    )
    _message(
        file,
        "MetricMetadata",
        [
            ("type", 1, opt, _F.TYPE_INT32, ""),
            ("metric_family_name", 2, opt, _F.TYPE_STRING, ""),
            ("help", 4, opt, _F.TYPE_STRING, ""),
            ("unit", 5, opt, _F.TYPE_STRING, ""),
        ],
    )
    _message(
        file,
        "RawTimeSeries",
        [
            ("labels", 1, rep, _F.TYPE_BYTES, ""),
            ("samples", 2, rep, _F.TYPE_MESSAGE, ".prometheus.Sample"),
            ("histograms", 4, rep, _F.TYPE_BYTES, ""),
        ],
    )
    _message(
        file,
        "RawWriteRequest",
        [("timeseries", 1, rep, _F.TYPE_MESSAGE, ".prometheus.RawTimeSeries")],
    )
    _message(
        file,
        "WriteRequest",
        [
            ("timeseries", 1, rep, _F.TYPE_MESSAGE, ".prometheus.TimeSeries"),
            ("metadata", 3, rep, _F.TYPE_MESSAGE, ".prometheus.MetricMetadata"),
        ],
    )
    pool = descriptor_pool.DescriptorPool()
    built = pool.Add(file)
    return {
        name: message_factory.GetMessageClass(built.message_types_by_name[name])
        for name in ("Label", "Sample", "TimeSeries", "WriteRequest", "RawWriteRequest")
    }


_CLASSES = _build()
#: The message classes; `WriteRequest.FromString(body)` decodes a request.
WriteRequest: Any = _CLASSES["WriteRequest"]
TimeSeries: Any = _CLASSES["TimeSeries"]
RawWriteRequest: Any = _CLASSES["RawWriteRequest"]
Label: Any = _CLASSES["Label"]
