"""Rewrite step: restrict a single-table query to the rows inserted since the watermark.

Rows carry the batch id that inserted them; `$lo < batch_id <= $hi` is the change set between
two refreshes ($lo the table's watermark, $hi the new high watermark read in the refresh).
"""

from __future__ import annotations

from sqlglot import exp

BATCH_COLUMN = "batch_id"


def restrict_to_delta(select: exp.Select) -> exp.Select:
    """A copy of `select` reading only rows with `$lo < batch_id <= $hi` of its FROM table (in
    a join, the fact table: the other tables are read as they are).

    >>> import sqlglot
    >>> restrict_to_delta(sqlglot.parse_one("SELECT a FROM t AS x WHERE a > 1")).sql("duckdb")
    'SELECT a FROM t AS x WHERE a > 1 AND (x.batch_id > $lo AND x.batch_id <= $hi)'
    """
    select = select.copy()
    from_ = select.args.get("from_") or select.args.get("from")
    table = from_.this if from_ is not None else None
    assert isinstance(table, exp.Table), "the planner sends only queries over tables here"
    qualifier = table.alias_or_name
    column = exp.column(BATCH_COLUMN, table=qualifier)
    window = exp.and_(
        exp.GT(this=column, expression=exp.Placeholder(this="lo")),
        exp.LTE(this=column.copy(), expression=exp.Placeholder(this="hi")),
    )
    return select.where(window)
