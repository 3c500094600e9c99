"""Binds the model functions of `udfs/` into a DuckDB connection.

This is the only module of `udfs/` that imports duckdb. Each entry says how a pure Python
function becomes a SQL function; the model functions themselves arrive with their own issue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import duckdb


@dataclass(frozen=True)
class Udf:
    """One SQL function: its name, the Python function, argument and return types."""

    name: str
    function: Callable[..., Any]
    parameters: tuple[str, ...]
    returns: str
    deterministic: bool = True


#: Every model function wanka registers; filled by the udfs modules.
REGISTRY: tuple[Udf, ...] = ()


def register(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Create every registered function on `con`; returns their names."""
    names = []
    for udf in REGISTRY:
        con.create_function(
            udf.name,
            cast(Any, udf.function),
            cast(Any, list(udf.parameters)),
            cast(Any, udf.returns),
            type="arrow",
            side_effects=not udf.deterministic,
        )
        names.append(udf.name)
    return names
