"""The statements a refresh runs, built from a plan's queries as sqlglot trees.

A plan (`warehouse.dynamic.plan.kinds`) holds queries; a refresh wraps them in INSERT, DELETE
and MERGE statements on the dynamic table `main."<name>"` and its state `wanka."dt_<name>_state"`.
They are built here once per plan and process (`compile`), each with the parameters it binds,
so a refresh only binds values and runs them.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from warehouse.dynamic.plan import state_table
from warehouse.dynamic.plan.joins import changed_rows, changes_table, tables_of
from warehouse.dynamic.plan.kinds import Aggregate, Append, Full, Groups, Plan, Recompute
from warehouse.dynamic.plan.reach import reach
from warehouse.kernel.tables import TRACKED
from warehouse.promql import sql_function
from warehouse.tsdb import prune, relations
from warehouse.tsdb.retention import TIME_TABLES


@dataclass(frozen=True)
class Step:
    """One statement and the named parameters it binds."""

    sql: str
    params: frozenset[str]

    def run(self, cur: duckdb.DuckDBPyConnection, values: dict[str, Any]) -> int:
        """Run it with those of `values` it binds; the first value of its result as an int
        (the rows a DML statement changed, or a count)."""
        given = {k: v for k, v in values.items() if k in self.params}
        sql = sql_function.expand(cur, self.sql)  # a PromQL call: its times are taken now
        rows = cur.execute(sql, given).fetchall() if given else cur.execute(sql).fetchall()
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def row(self, cur: duckdb.DuckDBPyConnection, values: dict[str, Any]) -> dict[str, Any]:
        """Its one result row as a dict of column name to value."""
        sql = sql_function.expand(cur, self.sql)
        result = cur.execute(sql, {k: v for k, v in values.items() if k in self.params})
        names = [d[0] for d in result.description]
        return dict(zip(names, result.fetchall()[0], strict=True))


def step(tree: exp.Expr) -> Step:
    params = frozenset(p.name for p in tree.find_all(exp.Placeholder) if p.name)
    # a bounded read of gpu_metrics decodes only the compressed blocks it needs
    tree = prune.rewrite(tree.copy()) or tree
    return Step(tree.sql("duckdb"), params)


@dataclass(frozen=True)
class Rewrite:
    """Replace some rows: the DELETE of the old ones, then the INSERT of the new."""

    delete: Step
    insert: Step


@dataclass(frozen=True)
class Regroup:
    """Recompute the affected groups: read their bounds, rebuild an aggregate's state rows of
    them (`state`, none for groups plans), then rewrite their visible rows."""

    bounds: Step
    state: tuple[Step, ...]
    rewrite: Rewrite


@dataclass(frozen=True)
class RefreshSql:
    """Every statement a refresh of one dynamic table may run."""

    probe: Step  # now(), the changes logged since $wm, each tracked source's new max batch id
    full: Rewrite  # every visible row
    state_full: tuple[Step, ...]  # an aggregate's state, rebuilt whole
    append: Step | None  # Append: insert the delta's rows
    merge: Step | None  # Aggregate: fold the delta into the state...
    touched: Rewrite | None  # ...and rewrite the groups it touched
    regroup: Regroup | None  # Aggregate, Groups: recompute the affected groups
    regroup_facts: Regroup | None  # Groups over a join, when only the facts changed
    count_visible: Step
    count_facts: Step  # rows of the first table the query reads
    # per joined table: the earliest fact time its changed rows reach, and how many reach
    # back without bound (warehouse.dynamic.plan.reach); and the earliest time of the fact
    # rows written, updated or deleted in the window
    reach: dict[str, Step] = field(default_factory=dict)
    fact_since: Step | None = None


def visible_table(name: str) -> exp.Table:
    """`main."<name>"`: the table people query."""
    return exp.Table(this=exp.to_identifier(name, quoted=True), db=exp.to_identifier("main"))


def create_tables(name: str, plan: Plan) -> list[str]:
    """CREATE TABLE of the dynamic table (the query's columns, no rows) and of its state."""
    made = [
        _create_empty(
            visible_table(name), exp.select(exp.Star()).from_(_parse(plan.query).subquery())
        )
    ]
    if isinstance(plan, Aggregate):
        made.append(_create_empty(state_table(name), _with_watermark(_parse(plan.state), 0)))
    return made


def drop_tables(name: str) -> list[str]:
    """DROP TABLE IF EXISTS of the dynamic table and of its state."""
    return [
        exp.Drop(tables=[t], kind="TABLE", exists=True).sql("duckdb")
        for t in (visible_table(name), state_table(name))
    ]


def _create_empty(table: exp.Table, query: exp.Select) -> str:
    return exp.Create(this=table, kind="TABLE", expression=query.limit(0)).sql("duckdb")


_COMPILED: dict[tuple[str, Plan], RefreshSql] = {}
_LOCK = threading.Lock()


def compile(cur: duckdb.DuckDBPyConnection, name: str, plan: Plan) -> RefreshSql:
    """The statements for refreshing `name` by `plan` (built once per process)."""
    with _LOCK:
        found = _COMPILED.get((name, plan))
    if found is None:
        found = _build(name, plan, _key_columns(cur, name, plan))
        with _LOCK:
            _COMPILED[(name, plan)] = found
    return found


def _key_columns(cur: duckdb.DuckDBPyConnection, name: str, plan: Plan) -> list[str]:
    if not plan.key_positions:
        return []
    target = visible_table(name).sql("duckdb")
    columns = [d[0] for d in cur.execute(f"SELECT * FROM {target} LIMIT 0").description]
    return [columns[p] for p in plan.key_positions]


def _parse(sql: str) -> exp.Query:
    tree = sqlglot.parse_one(sql, read="duckdb")
    assert isinstance(tree, exp.Query), sql
    return tree


def _build(name: str, plan: Plan, keys: list[str]) -> RefreshSql:
    target, state = visible_table(name), state_table(name)
    aggregate = isinstance(plan, Aggregate)
    touched = regroup = regroup_facts = merge = append = None
    if isinstance(plan, Append):
        append = step(exp.insert(_parse(plan.delta), target))
    elif isinstance(plan, Aggregate):
        merge = step(sqlglot.parse_one(plan.merge, read="duckdb"))
        marked = exp.select(*_k(len(keys))).from_(state).where(_at_hi(exp.column("__wm")))
        touched = Rewrite(
            _delete_keys(target, "v", keys, marked), step(exp.insert(_parse(plan.visible), target))
        )
        if plan.recompute is not None:
            regroup = _regroup(plan.recompute, target, state, keys, plan.visible)
    elif isinstance(plan, Groups):
        regroup = _regroup(plan.recompute, target, None, keys, None)
        if plan.fact_only is not None:
            regroup_facts = _regroup(plan.fact_only, target, None, keys, None)
    else:
        assert isinstance(plan, Full)
    return RefreshSql(
        probe=_probe(plan.sources),
        full=Rewrite(step(exp.delete(target)), step(exp.insert(_parse(plan.query), target))),
        state_full=_state_full(state, plan.state) if aggregate else (),  # type: ignore[union-attr]
        append=append,
        merge=merge,
        touched=touched,
        regroup=regroup,
        regroup_facts=regroup_facts,
        count_visible=_count(target),
        count_facts=_count_rows_of(plan.sources[0]),
        reach=_reach(plan),
        fact_since=_fact_since(plan.sources[0]) if plan.sources[0] in TIME_TABLES else None,
    )


def _reach(plan: Plan) -> dict[str, Step]:
    """For a join over a time table: per tracked table joined once, the earliest time of the
    facts its rows changed in ($lo, $hi] can join (`since`), and how many of them have no such
    bound (`open`)."""
    if not isinstance(plan, Groups | Aggregate) or plan.sources[0] not in TIME_TABLES:
        return {}
    select = _parse(plan.query)
    assert isinstance(select, exp.Select)
    fact, *joined = tables_of(select)
    names = [t.name.lower() for t in joined]
    found = {}
    for table in joined:
        name = table.name.lower()
        if name not in TRACKED or names.count(name) > 1:
            continue
        column = TIME_TABLES[plan.sources[0]][0]
        bound = reach(select, fact.alias_or_name, column, table.alias_or_name)
        if bound is None:
            continue
        rows = changed_rows(table, frozenset()).subquery(table.alias_or_name)
        bounds = exp.select(exp.alias_(bound, "b")).from_(rows).subquery("r")
        found[name] = step(
            _parse(
                "SELECT min(b) AS since, count(*) FILTER (WHERE b IS NULL) AS open "
                f"FROM {bounds.sql('duckdb')}"
            )
        )
    return found


def _fact_since(source: str) -> Step:
    """The earliest time of the rows `source` (a time table) gained in ($lo, $hi], or logged
    as updated or deleted then (its change log holds the old and the new rows)."""
    column, stored = TIME_TABLES[source]
    first = column
    if stored == relations.HOT:  # gpu_metrics: the log of its inserts says, not a scan
        first, stored = "ts_min", relations.BATCHES
    new = f"SELECT min({first}) FROM {stored} WHERE batch_id > $lo AND batch_id <= $hi"
    log = changes_table(source).sql("duckdb")
    logged = f"SELECT min({column}) FROM {log} WHERE seq > $lo AND seq <= $hi"
    return step(_parse(f"SELECT least(({new}), ({logged})) AS since"))


def held_full(cur: duckdb.DuckDBPyConnection, name: str, plan: Plan, key: int) -> tuple[Step, ...]:
    """A FULL refresh of only the buckets of GROUP BY key `key` from `$from` on (its source
    dropped older rows: warehouse.tsdb.retention): DELETE and INSERT of those visible rows and, for
    an aggregate, of those state rows. Built when asked: this is rare."""
    target, state = visible_table(name), state_table(name)
    column = _key_columns(cur, name, plan)[key]
    since = exp.Placeholder(this="from")

    def restricted(sql: str) -> exp.Select:
        select = _parse(sql)
        assert isinstance(select, exp.Select)
        bucket = select.args["group"].expressions[key]
        time_column = next(bucket.find_all(exp.Column)).copy()
        return select.where(exp.GTE(this=time_column, expression=since.copy()))

    held = exp.GTE(this=exp.column(column, quoted=True), expression=since.copy())
    steps = [step(exp.delete(target, where=held)), step(exp.insert(restricted(plan.query), target))]
    if isinstance(plan, Aggregate):
        state_held = exp.GTE(this=exp.column(f"k{key}"), expression=since.copy())
        steps.append(step(exp.delete(state, where=state_held)))
        steps.append(step(exp.insert(_with_watermark(restricted(plan.state)), state)))
    return tuple(steps)


def _batches_of(source: str) -> exp.Table:
    """Where `source`'s newest batch id is read: the table itself, or for gpu_metrics the log
    of its sample inserts (a scan of the samples would walk every row group's zone map)."""
    return _stored(source, relations.BATCHES, db="")


def _count_rows_of(source: str) -> Step:
    """The count of `source`'s rows. gpu_metrics is a view: its hot samples are a table
    (DuckDB counts a table from its metadata, a view by running it) and its blocks say how many
    samples they hold."""
    if not relations.is_view(source):
        return _count(_stored(source, "", db="main"))
    return step(
        _parse(
            f"SELECT (SELECT count(*) FROM {relations.HOT}) + "
            f"(SELECT coalesce(sum(samples), 0) FROM {relations.BLOCKS})"
        )
    )


def _stored(source: str, for_view: str, db: str) -> exp.Table:
    """`source` as a table (in `db`, if given), or `for_view` ('schema.table') for gpu_metrics."""
    if relations.is_view(source):
        schema, name = for_view.split(".")
        return exp.Table(this=exp.to_identifier(name, quoted=True), db=schema)
    return exp.Table(this=exp.to_identifier(source, quoted=True), db=db or None)


def _k(count: int) -> list[exp.Column]:
    return [exp.column(f"k{i}") for i in range(count)]


def _at_hi(column: exp.Expression) -> exp.EQ:
    return exp.EQ(this=column, expression=exp.Placeholder(this="hi"))


def _count(table: exp.Table) -> Step:
    return step(exp.select(exp.Count(this=exp.Star())).from_(table.copy()))


def _with_watermark(query: exp.Query, mark: int | None = None) -> exp.Select:
    """`SELECT *, CAST($hi AS BIGINT) AS __wm FROM (query)`: state rows stamped by this refresh
    (or by `mark`)."""
    value = exp.Placeholder(this="hi") if mark is None else exp.Literal.number(mark)
    stamp = exp.cast(value, exp.DataType.build("BIGINT"))
    return exp.select(exp.Star(), exp.alias_(stamp, "__wm")).from_(query.subquery())


def _state_full(state: exp.Table, state_sql: str) -> tuple[Step, ...]:
    rebuild = exp.insert(_with_watermark(_parse(state_sql)), state)
    return step(exp.delete(state)), step(rebuild)


def _delete_keys(table: exp.Table, alias: str, columns: list[str], keys: exp.Query) -> Step:
    """DELETE of `table`'s rows whose `columns` match a row (k0, k1, ...) of `keys`, NULL-safe."""
    match = exp.and_(
        *(
            exp.NullSafeEQ(
                this=exp.column(c, alias, quoted=True), expression=exp.column(f"k{i}", "d")
            )
            for i, c in enumerate(columns)
        )
    )
    delete = exp.Delete(
        this=table.copy().as_(alias), using=[keys.subquery("d")], where=exp.Where(this=match)
    )
    return step(delete)


def _regroup(
    recompute: Recompute,
    target: exp.Table,
    state: exp.Table | None,
    keys: list[str],
    visible: str | None,
) -> Regroup:
    affected = _parse(recompute.affected)
    rebuild: tuple[Step, ...] = ()
    if state is not None and visible is not None:  # an aggregate: its state rows first
        state_keys = [f"k{i}" for i in range(len(keys))]
        rows = exp.insert(_with_watermark(_parse(recompute.groups)), state)
        rebuild = (_delete_keys(state, "s", state_keys, affected), step(rows))
        insert = exp.insert(_parse(visible), target)
    else:
        insert = exp.insert(
            exp.select(exp.Star()).from_(_parse(recompute.groups).subquery()), target
        )
    rewrite = Rewrite(_delete_keys(target, "v", keys, affected), step(insert))
    return Regroup(step(_parse(recompute.bounds)), rebuild, rewrite)


_CHANGES = (
    "SELECT list((table_name, kind, n, seq) ORDER BY table_name, kind) FROM ("
    "SELECT table_name, kind, sum(rows) AS n, max(seq) AS seq FROM wanka.table_changes "
    "WHERE seq > $wm AND list_contains($sources, table_name) GROUP BY ALL)"
)


def _probe(sources: tuple[str, ...]) -> Step:
    """One statement: the transaction's now(), the changes logged since the watermark, and the
    new maximum batch id of each tracked source (`batch_id > $wm` lets zone maps skip the rows
    older than the last refresh)."""
    columns: list[exp.Expr] = [exp.func("now"), _parse(_CHANGES).subquery()]
    for source in sources:
        if source in TRACKED:
            # gpu_metrics: the log of sample inserts, not the samples (tsdb.relations.BATCHES)
            # BATCHES)
            table = _batches_of(source)
            newer = exp.GT(this=exp.column("batch_id"), expression=exp.Placeholder(this="wm"))
            high = exp.select(exp.Max(this=exp.column("batch_id"))).from_(table).where(newer)
            columns.append(high.subquery())
    return step(exp.select(*columns))


@functools.cache
def trim(table: str) -> Step:
    """DELETE of `table`'s logged rows that every dynamic table reading it has seen."""
    seen = exp.select(
        exp.func(
            "coalesce",
            exp.Min(this=exp.func("coalesce", exp.column("watermark"), exp.Literal.number(0))),
            exp.Literal.number(2**63 - 1),
        )
    ).from_("wanka.dynamic_tables")
    seen = seen.where(exp.func("list_contains", exp.column("sources"), exp.Literal.string(table)))
    older = exp.LTE(this=exp.column("seq"), expression=seen.subquery())
    return step(exp.delete(changes_table(table), where=older))
