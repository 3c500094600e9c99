"""INSERT, UPDATE and DELETE on gpu_metrics, run on the series and samples behind it.

DuckDB cannot write through a view, so a statement whose target is gpu_metrics is rewritten
(sqlglot tree, DuckDB dialect) and run here, on the caller's cursor, in the caller's
transaction:

- INSERT: its source (VALUES or a query, with the parameters given) is run into a temporary
  table, whose rows `warehouse.tsdb.append.append_from` adds as series and samples;
- DELETE: on wanka.gpu_samples, USING wanka.gpu_series joined by series id, the WHERE as written
  (columns of gpu_metrics name either table's columns: their names do not overlap);
- UPDATE: the same, for SET of value, ts or batch_id. The other columns name the series a
  sample belongs to; changing them is a DELETE and an INSERT, and is refused with that advice.
  An UPDATE or DELETE that would touch a compressed sample (wanka.gpu_blocks) is refused:
  blocks are not rewritten.
- TRUNCATE: the samples and every block; the blocks' samples are logged as deleted rows, as
  the triggers log the hot ones, so a dynamic table over gpu_metrics sees them go.

The triggers on wanka.gpu_samples log each statement as a change of gpu_metrics, as before;
the samples an UPDATE or DELETE touches are noted for the downsampling tiers to rebuild
(`telemetry_tiers.mark`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from warehouse.errors import UserError
from warehouse.kernel.transactions import transaction
from warehouse.tsdb import relations, tiers
from warehouse.tsdb.append import append_from

Params = Sequence[Any] | dict[str, Any] | None

_JOIN = "gpu_samples.series_id = gpu_series.series_id"


def targets_view(target: tuple[str, str] | None) -> bool:
    """Whether a statement's written table (schema, name) is gpu_metrics."""
    return target is not None and relations.is_view(".".join(p for p in target if p))


def run(cur: duckdb.DuckDBPyConnection, text: str, params: Params) -> int:
    """Run one INSERT, UPDATE, DELETE or TRUNCATE of gpu_metrics; the rows it changed. It runs
    as several statements: in the caller's transaction if one is open, else in one of its own."""
    if not _in_transaction(cur):
        with transaction(cur):
            return _run_statement(cur, text, params)
    return _run_statement(cur, text, params)


def _in_transaction(cur: duckdb.DuckDBPyConnection) -> bool:
    """Whether `cur` is inside a transaction it opened: two statements then share one id
    (outside, each statement is a transaction of its own)."""
    ids = "SELECT txid_current()"
    return bool(cur.execute(ids).fetchall() == cur.execute(ids).fetchall())


def _run_statement(cur: duckdb.DuckDBPyConnection, text: str, params: Params) -> int:
    try:
        tree = sqlglot.parse_one(text, dialect="duckdb")
    except SqlglotError as error:
        raise UserError(f"could not read this statement on gpu_metrics: {error}") from None
    if tree.args.get("returning"):
        raise UserError("RETURNING is not supported on gpu_metrics")
    if isinstance(tree, exp.Insert):
        return _insert(cur, tree, params)
    if isinstance(tree, exp.Delete | exp.Update):
        sql, keys, cold = _delete_sql(tree) if isinstance(tree, exp.Delete) else _update_sql(tree)
        return _changed(cur, sql, keys, params, cold)
    if isinstance(tree, exp.TruncateTable):
        tiers.mark(cur, f"SELECT series_id, ts FROM {relations.SAMPLES}")  # hot and cold
        dropped = _drop_blocks(cur)
        return dropped + _run(cur, f"DELETE FROM {relations.HOT}", None)
    raise UserError(f"this statement cannot write gpu_metrics: {text[:80]}")


def _run(cur: duckdb.DuckDBPyConnection, sql: str, params: Params) -> int:
    rows = cur.execute(sql, params).fetchall() if params else cur.execute(sql).fetchall()
    return int(rows[0][0]) if rows else 0


def _changed(
    cur: duckdb.DuckDBPyConnection, sql: str, keys: str, params: Params, cold: str = ""
) -> int:
    """Run an UPDATE or DELETE of samples, first noting the series and times it touches
    (`keys`, before and after) for the tiers to rebuild. `cold` counts the compressed samples
    the statement would touch: it is refused if there are any (blocks are not rewritten)."""
    if cold and (found := _run(cur, cold, params)):
        verb = sql.split(maxsplit=1)[0]
        raise UserError(
            f"{verb} of gpu_metrics would change {found} samples of closed windows, which are "
            "stored in compressed blocks and are not rewritten: narrow the WHERE to the open "
            "window, or drop old samples with retention (ALTER TABLE gpu_metrics SET "
            "(retention = ...))"
        )
    tiers.mark(cur, keys, params)
    return _run(cur, sql, params)


def _drop_blocks(cur: duckdb.DuckDBPyConnection) -> int:
    """Drop every compressed block, logging its samples as deleted rows of gpu_metrics as the
    triggers on the hot samples log theirs (sql/schema/0012_compact_telemetry.sql), so a
    dynamic table over gpu_metrics sees the change; the samples dropped."""
    logged = cur.execute(
        "INSERT INTO wanka.table_changes SELECT 'gpu_metrics', nextval('wanka.batch_seq'), "
        f"'delete', sum(samples), now() FROM {relations.BLOCKS} HAVING count(*) > 0 "
        "RETURNING rows"
    ).fetchall()
    if not logged:
        return 0
    cur.execute(
        'INSERT INTO wanka."changes_gpu_metrics" '
        "SELECT o.ts, r.host, r.gpu, r.uuid, r.model, r.metric, o.value, r.labels, o.batch_id, "
        f"currval('wanka.batch_seq'), 'deleted' FROM ({relations.cold()}) o "
        f"JOIN {relations.SERIES} r ON r.series_id = o.series_id "
        "WHERE EXISTS (SELECT 1 FROM wanka.dynamic_tables "
        "WHERE list_contains(sources, 'gpu_metrics'))"
    )
    cur.execute(f"DELETE FROM {relations.BLOCKS}")
    return int(logged[0][0])


def _insert(cur: duckdb.DuckDBPyConnection, tree: exp.Insert, params: Params) -> int:
    if tree.args.get("conflict"):
        raise UserError("INSERT ... ON CONFLICT is not supported on gpu_metrics")
    source = tree.expression
    if source is None:
        raise UserError("INSERT INTO gpu_metrics needs VALUES or a query")
    given = [c.name for c in tree.this.expressions] if isinstance(tree.this, exp.Schema) else []
    temp = f"_wanka_gpu_metrics_in_{threading.get_ident()}"
    sql = source.sql(dialect="duckdb")
    body = f"SELECT * FROM ({sql}) AS _src" if isinstance(source, exp.Values) else sql
    cur.execute(f'CREATE OR REPLACE TEMP TABLE "{temp}" AS {body}', params or None)
    try:
        found = [row[0] for row in cur.execute(f'DESCRIBE "{temp}"').fetchall()]
        names = _names(tree, given, found)
        if names != found:
            renames = ", ".join(
                f"{_quoted(old)} AS {new}" for old, new in zip(found, names, strict=True)
            )
            relation = f'(SELECT {renames} FROM "{temp}")'
        else:
            relation = f'"{temp}"'
        return append_from(cur, relation, set(names))
    finally:
        with contextlib.suppress(duckdb.TransactionException):  # aborted: keep the first error
            cur.execute(f'DROP TABLE IF EXISTS "{temp}"')


def _quoted(name: str) -> str:
    """A column name as a quoted identifier (DuckDB names `value * 1.5` after its text).

    >>> _quoted('("value" * 1.5)')
    '"(""value"" * 1.5)"'
    """
    return '"' + name.replace('"', '""') + '"'


def _names(tree: exp.Insert, given: list[str], found: list[str]) -> list[str]:
    """The gpu_metrics column each source column goes to: the list given, the source's own
    names for BY NAME, else the view's columns in order."""
    columns = list(relations.COLUMNS)
    if tree.args.get("by_name"):
        names = found
    elif given:
        names = given
    else:
        names = columns[: len(found)]
    if len(names) != len(found) or len(found) > len(columns):
        raise UserError(
            f"INSERT INTO gpu_metrics: {len(found)} values for {len(names) or len(columns)} columns"
        )
    for name in names:
        if name not in relations.COLUMNS:
            raise UserError(f"gpu_metrics has no column {name!r}")
    if len(set(names)) != len(names):
        raise UserError("INSERT INTO gpu_metrics names a column twice")
    return names


def _keys(tables: str, where: str, sets: dict[str, str] | None = None) -> str:
    """The series and times of the samples a statement touches (and where an UPDATE of ts
    moves them), as the tiers need them. An UPDATE's SET expressions are all selected, in
    their order, so that the statement's parameters bind here as they do there."""
    sets = sets or {}
    times = f"[gpu_samples.ts, {sets['ts']}]" if "ts" in sets else "[gpu_samples.ts]"
    extra = "".join(f", {value} AS _set{i}" for i, value in enumerate(sets.values()))
    rows = (
        f"SELECT gpu_samples.series_id, unnest({times}) AS ts{extra} "
        f"FROM {relations.HOT}, {tables} WHERE {_JOIN}{where}"
    )
    return f"SELECT series_id, ts FROM ({rows})"


def _cold(tables: str, where: str) -> str:
    """The count of compressed samples a statement's WHERE selects."""
    return (
        f"SELECT count(*) FROM ({relations.cold()}) AS gpu_samples, {tables} WHERE {_JOIN}{where}"
    )


def _delete_sql(tree: exp.Delete) -> tuple[str, str, str]:
    alias = _alias(tree.this)
    where = _where(tree, alias)
    using = [u.sql(dialect="duckdb") for u in tree.args.get("using") or []]
    tables = ", ".join([relations.SERIES, *using])
    delete = f"DELETE FROM {relations.HOT} USING {tables} WHERE {_JOIN}{where}"
    return delete, _keys(tables, where), _cold(tables, where)


def _update_sql(tree: exp.Update) -> tuple[str, str, str]:
    alias = _alias(tree.this)
    sets = []
    values: dict[str, str] = {}
    for assignment in tree.expressions:
        column = assignment.this
        name = column.name if isinstance(column, exp.Column) else str(column)
        if name not in relations.SAMPLE_COLUMNS:
            raise UserError(
                f"UPDATE of gpu_metrics.{name} is not supported: the labels name the series a "
                "sample belongs to; DELETE the rows and INSERT them with the new labels"
            )
        value = _requalified(assignment.expression, alias)
        sets.append(f"{name} = {value.sql(dialect='duckdb')}")
        values[name] = value.sql(dialect="duckdb")
    extra = tree.args.get("from")
    tables = relations.SERIES + (
        ", " + ", ".join(e.sql(dialect="duckdb") for e in extra.expressions) if extra else ""
    )
    where = _where(tree, alias)
    update = f"UPDATE {relations.HOT} SET {', '.join(sets)} FROM {tables} WHERE {_JOIN}{where}"
    return update, _keys(tables, where, values), _cold(tables, where)


def _alias(target: exp.Expression) -> str:
    """The name the statement's columns may be qualified with: the alias, else gpu_metrics."""
    table = target.this if isinstance(target, exp.Schema) else target
    return (table.alias or table.name) if isinstance(table, exp.Table) else relations.VIEW


def _where(tree: exp.Expression, alias: str) -> str:
    where = tree.args.get("where")
    if where is None:
        return ""
    return f" AND ({_requalified(where.this, alias).sql(dialect='duckdb')})"


def _requalified(node: exp.Expression, alias: str) -> exp.Expression:
    """`node` with columns qualified by the target's name moved to the table that holds them;
    subqueries are left alone (their names are their own)."""
    node = node.copy()

    def fix(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and n.table and n.table.lower() == alias.lower():
            holder = "gpu_series" if n.name in relations.LABEL_COLUMNS else "gpu_samples"
            return exp.column(n.name, table=holder)
        return n

    return _transform_outside_subqueries(node, fix)


def _transform_outside_subqueries(
    node: exp.Expression, fix: Callable[[exp.Expression], exp.Expression]
) -> exp.Expression:
    if isinstance(node, exp.Select | exp.Subquery):
        return node
    for key, child in list(node.args.items()):
        if isinstance(child, exp.Expression):
            node.set(key, _transform_outside_subqueries(child, fix))
        elif isinstance(child, list):
            node.set(
                key,
                [
                    _transform_outside_subqueries(c, fix) if isinstance(c, exp.Expression) else c
                    for c in child
                ],
            )
    return fix(node)
