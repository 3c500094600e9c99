"""The model functions of `udfs/` as Spark Arrow UDFs, from the same Python definitions.

Each `Model` is registered under its SQL name with `pyspark.sql.functions.arrow_udf` (Spark
≥ 4.1) around `udfs.registry.arrow_function` — the function DuckDB binds on a read-only file —
so the formula, the NULL handling and the domain errors are one implementation. Arguments
arrive cast by the portable-SQL rule `model_arguments` (Spark passes `400.0` as DECIMAL and
counts as INT; the Python function takes DOUBLE, as DuckDB's Arrow binding does).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from udfs.registry import REGISTRY, arrow_function

#: Spark SQL type of each model return type.
RETURN_TYPES = {"DOUBLE": "double", "INTEGER": "int", "VARCHAR": "string", "BOOLEAN": "boolean"}


def _as_double(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Numbers as float64 (Spark may still hand over DECIMAL or INT from a CAST it folded)."""
    kind = column.type
    if pa.types.is_decimal(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return column.cast(pa.float64())
    return column


def spark_function(name: str) -> Any:
    """The plain Python function Spark calls for model `name`: Arrow arrays in and out."""
    model = next(m for m in REGISTRY if m.name == name)
    apply = arrow_function(model)
    numeric = [p.type in ("DOUBLE", "INTEGER") for p in model.params.values()]

    def call(*columns: pa.Array) -> pa.Array:
        cols = [_as_double(c) if n else c for c, n in zip(columns, numeric, strict=True)]
        return apply(*cols)

    call.__name__ = name
    return call


def register_models(spark: Any) -> list[str]:
    """Register every model function on `spark`; returns the names."""
    from pyspark.sql.functions import (  # type: ignore[attr-defined,unused-ignore]
        ArrowUDFType,
        arrow_udf,
    )

    names = []
    for model in REGISTRY:
        udf = arrow_udf(
            spark_function(model.name),
            RETURN_TYPES[model.returns],
            ArrowUDFType.SCALAR,
        )
        if not model.deterministic:
            udf = udf.asNondeterministic()
        spark.udf.register(model.name, udf)
        names.append(model.name)
    return names
