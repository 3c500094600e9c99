"""Named analyses: the questions operators ask, answered in SQL shipped in `sql/analyses/`.

    reader = run_analysis(cur, "queue_wait", {"cluster": "philly"})

Each analysis is one `.sql` file: a header comment that documents it (title, what it answers,
`$name TYPE = default` parameters, result columns with units) and one query over the base
tables, the dynamic tables and the model functions, so what a person reads in `sql/analyses/`
is what runs. `catalog` reads the files and their headers (the format is in its docstring);
`params` turns caller-given text into the declared types (an unknown name or a value of the
wrong type is a UserError, exit status 2), and the file runs through the shared query path with
DuckDB named parameters: the SQL text is never edited. `wanka analyze`, the HTTP routes
(`/v1/analyses`) and the report (`warehouse.report`) all call `run_analysis`.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa

from warehouse.analyses.catalog import Analysis, Column, all_analyses, analysis_named
from warehouse.analyses.params import Param, bind, parse_assignments
from warehouse.query.executor import execute

__all__ = [
    "Analysis",
    "Column",
    "Param",
    "all_analyses",
    "analysis_named",
    "parse_assignments",
    "run_analysis",
    "run_analysis_table",
]


def run_analysis(
    cur: duckdb.DuckDBPyConnection, name: str, given: dict[str, str] | None = None
) -> pa.RecordBatchReader:
    """Run the analysis `name` with the given parameter values (text) over defaults.

    Unknown names and values that are not of the declared type raise UserError (exit 2).
    """
    analysis = analysis_named(name)
    values: dict[str, Any] = bind(analysis.params, given or {}, name)
    return execute(cur, analysis.sql, values or None)


def run_analysis_table(
    cur: duckdb.DuckDBPyConnection, name: str, given: dict[str, str] | None = None
) -> pa.Table:
    """`run_analysis`, read whole (for the report: analyses return summaries, not raw rows)."""
    reader = run_analysis(cur, name, given)
    try:
        return reader.read_all()
    finally:
        reader.close()
