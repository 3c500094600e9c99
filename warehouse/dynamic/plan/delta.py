"""Rewrite step: restrict a single-table query to the rows inserted since the watermark.

Rows carry the batch id that inserted them; `$lo < batch_id <= $hi` is the change set between
two refreshes ($lo the table's watermark, $hi the new high watermark read in the refresh).
"""

from __future__ import annotations

from sqlglot import exp

BATCH_COLUMN = "batch_id"


def restrict_to_delta(select: exp.Select) -> exp.Select:
    """A copy of `select` reading only rows with `$lo < batch_id <= $hi`.

    >>> import sqlglot
    >>> restrict_to_delta(sqlglot.parse_one("SELECT a FROM t AS x WHERE a > 1")).sql("duckdb")
    'SELECT a FROM t AS x WHERE a > 1 AND (x.batch_id > $lo AND x.batch_id <= $hi)'
    """
    select = select.copy()
    table = select.find(exp.Table)
    assert table is not None, "the planner sends only single-table queries here"
    qualifier = table.alias_or_name
    column = exp.column(BATCH_COLUMN, table=qualifier)
    window = exp.and_(
        exp.GT(this=column, expression=exp.Placeholder(this="lo")),
        exp.LTE(this=column.copy(), expression=exp.Placeholder(this="hi")),
    )
    return select.where(window)
