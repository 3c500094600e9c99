"""Reads of `gpu_metrics` (and of its tiers) given only the compressed blocks they can need.

The `gpu_metrics` view decodes every cold block: DuckDB cannot push a filter on the decoded
`ts` down to the blocks' statistics. So a statement that reads gpu_metrics with a time, batch
or metric range in its WHERE is rewritten, before it runs, to read in its place the samples of
`relations.samples` within that range: the blocks outside are never decoded, and the samples
of those inside are cut to the range as they are decoded. The statement's own WHERE still
filters the rows, so the bounds may be wider than the predicates (a `>` becomes `>=`).

The same holds for the tiers' views, `gpu_metrics_1m` and `gpu_metrics_1h`, by their `bucket`.

A bound is taken from a conjunct of the WHERE of the SELECT that reads gpu_metrics: `ts`,
`batch_id` compared (`=`, `<`, `<=`, `>`, `>=`, `BETWEEN`) with an expression that names no
column (literals, parameters, now() - INTERVAL ...), and `metric = '...'` or `metric IN (...)`.
A column counts when it is qualified by gpu_metrics' name or alias, or unqualified when
gpu_metrics is the only table that SELECT reads. Anything else is left as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from warehouse.tsdb import buckets, names, relations, tier_blocks
from warehouse.tsdb.tiers import MINUTES, TIERS, single_samples

_COLUMNS = ", ".join(
    f"{'s' if c in relations.SAMPLE_COLUMNS else 'r'}.{c}" for c in relations.COLUMNS
)
#: Each view read through blocks: its time column, and the tier table below it (None: samples).
VIEWS: dict[str, tuple[str, str | None]] = {
    relations.VIEW: ("ts", None),
    **{f"gpu_metrics_{t.rsplit('_', 1)[1]}": ("bucket", t) for t in TIERS},
}
_TIER_COLUMNS = (
    "t.bucket, r.metric, r.host, r.gpu, r.uuid, r.model, r.labels, t.samples, t.value_sum, "
    "coalesce(t.value_min, t.value_sum) AS value_min, "
    "coalesce(t.value_max, t.value_sum) AS value_max, "
    "coalesce(t.value_last, t.value_sum) AS value_last, t.last_ts"
)


@dataclass
class Bounds:
    """What a read of gpu_metrics is known to need, as SQL expressions."""

    ts: list[str | None] = field(default_factory=lambda: [None, None])
    batch_id: list[str | None] = field(default_factory=lambda: [None, None])
    metrics: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any(b is not None for b in (*self.ts, *self.batch_id)) or bool(self.metrics)


def rewrite_sql(sql: str) -> str:
    """`sql` with each bounded read of gpu_metrics replaced (the text itself when none is).

    >>> "gpu_blocks" in rewrite_sql("SELECT * FROM gpu_metrics WHERE ts > now()")
    True
    >>> rewrite_sql("SELECT count(*) FROM gpu_metrics")
    'SELECT count(*) FROM gpu_metrics'
    """
    if relations.VIEW not in sql.lower():  # every view's name starts with it
        return sql
    try:
        tree = sqlglot.parse_one(sql, dialect="duckdb")
    except SqlglotError:
        return sql
    if any(isinstance(n.args.get("unit"), exp.Var) for n in tree.find_all(exp.DateBin)):
        return sql  # time_bucket(w, ts, 'Europe/Paris'): sqlglot writes the zone unquoted
    done = rewrite(tree)
    if done is None:
        return sql
    names.keep(sql, done)
    return done.sql(dialect="duckdb")


def rewrite(tree: exp.Expr) -> exp.Expr | None:
    """`tree` with each bounded read of gpu_metrics replaced, or None when there is none."""
    changed = False
    for table in list(tree.find_all(exp.Table)):
        if not _is_view(table):
            continue
        select = table.find_ancestor(exp.Select)
        if select is None or not _reads_directly(select, table):
            continue
        view = table.name.lower()
        column_of = _column_of(select, table, VIEWS[view][0])
        changed = buckets.rewrite(select, column_of) or changed
        bounds = _bounds(select, column_of)
        if not bounds:
            continue
        table.replace(_relation(view, bounds, table.alias_or_name))
        changed = True
    return tree if changed else None


def _is_view(table: exp.Table) -> bool:
    return (
        isinstance(table.this, exp.Identifier)
        and table.name.lower() in VIEWS
        and table.db.lower() in ("", "main")
        and not table.catalog
    )


def _reads_directly(select: exp.Select, table: exp.Table) -> bool:
    """Whether `table` is a source of `select` itself (FROM or JOIN), not of a subquery."""
    return any(t is table for t in _sources(select))


def _sources(select: exp.Select) -> list[exp.Expr]:
    found: list[exp.Expr] = []
    origin = select.args.get("from_") or select.args.get("from")
    if origin is not None:
        found.append(origin.this)
    found.extend(join.this for join in select.args.get("joins") or [])
    return found


def _column_of(select: exp.Select, table: exp.Table, time: str) -> Callable[[exp.Expr], str | None]:
    """Which of the view's columns a node of `select` is, if any (its time column as "ts")."""
    alone = len(_sources(select)) == 1
    name = table.alias_or_name.lower()

    def ours(node: exp.Expr) -> str | None:
        if not isinstance(node, exp.Column):
            return None
        if node.table.lower() == name or (not node.table and alone):
            column = node.name.lower()
            return "ts" if column == time else column if column != "ts" else None
        return None

    return ours


def _bounds(select: exp.Select, column_of: Callable[[exp.Expr], str | None]) -> Bounds:
    bounds = Bounds()
    where = select.args.get("where")
    if where is not None:
        for term in _conjuncts(where.this):
            _note(term, column_of, bounds)
    return bounds


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


_LOWER: dict[type[exp.Binary], int | None] = {
    exp.GT: 0,
    exp.GTE: 0,
    exp.LT: 1,
    exp.LTE: 1,
    exp.EQ: None,
}
_MIRROR: dict[type[exp.Binary], type[exp.Binary]] = {
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.EQ: exp.EQ,
}


def _note(term: exp.Expr, column_of: Callable[[exp.Expr], str | None], bounds: Bounds) -> None:
    """Add to `bounds` what one conjunct of the WHERE says of gpu_metrics' columns."""
    if isinstance(term, exp.Between):
        column = column_of(term.this)
        if column in ("ts", "batch_id") and _free(term.args["low"]) and _free(term.args["high"]):
            _set(bounds, column, 0, term.args["low"])
            _set(bounds, column, 1, term.args["high"])
        return
    if isinstance(term, exp.In) and column_of(term.this) == "metric":
        names = term.expressions
        if names and all(isinstance(n, exp.Literal) and n.is_string for n in names):
            bounds.metrics.extend(n.sql(dialect="duckdb") for n in names)
        return
    if not isinstance(term, exp.Binary) or type(term) not in _MIRROR:
        return
    kind: type[exp.Binary] = type(term)
    other = term.right
    column = column_of(term.left)
    if column is None:
        column, other, kind = column_of(term.right), term.left, _MIRROR[kind]
    if column == "metric" and kind is exp.EQ and isinstance(other, exp.Literal):
        bounds.metrics.append(other.sql(dialect="duckdb"))
    elif column in ("ts", "batch_id") and _free(other):
        side = _LOWER[kind]
        for at in (0, 1) if side is None else (side,):
            _set(bounds, column, at, other)


def _free(node: exp.Expr) -> bool:
    """Whether `node` can be evaluated outside the query: it names no column, has no subquery
    and no aggregate."""
    return not any(
        isinstance(n, exp.Column | exp.Select | exp.Subquery | exp.AggFunc | exp.Star)
        # `?`: a copy would shift the parameters after it
        or (isinstance(n, exp.Placeholder) and not n.args.get("this"))
        for n in node.walk()
    )


def _set(bounds: Bounds, column: str, at: int, value: exp.Expr) -> None:
    held = getattr(bounds, column)
    kind = "TIMESTAMPTZ" if column == "ts" else "BIGINT"
    text = f"CAST({value.sql(dialect='duckdb')} AS {kind})"
    if held[at] is None:
        held[at] = text
    else:  # two bounds on one side: the tighter one
        held[at] = f"{'greatest' if at == 0 else 'least'}({held[at]}, {text})"


def _relation(view: str, bounds: Bounds, alias: str) -> exp.Expr:
    metrics = ", ".join(bounds.metrics) or None
    tier = VIEWS[view][1]
    if tier is None:
        samples = relations.samples(
            ts=(bounds.ts[0], bounds.ts[1]),
            batches=(bounds.batch_id[0], bounds.batch_id[1]),
            metrics=metrics,
        )
        sql = (
            f"(SELECT {_COLUMNS} FROM {samples} AS s "
            f"JOIN {relations.SERIES} AS r ON r.series_id = s.series_id) AS {alias}"
        )
    else:
        rows = tier_blocks.rows(tier, bounds.ts[0], bounds.ts[1], metrics)
        if tier == MINUTES:  # and its minutes of one sample, from the samples
            hi = bounds.ts[1] and f"{bounds.ts[1]} + INTERVAL 1 MINUTE"
            raw = relations.samples(ts=(bounds.ts[0], hi), metrics=metrics)
            rows = f"({rows} UNION ALL {single_samples(rows, raw)})"
        sql = (
            f"(SELECT {_TIER_COLUMNS} FROM {rows} AS t "
            f"JOIN {relations.SERIES} AS r ON r.series_id = t.series_id) AS {alias}"
        )
    found: exp.Expr = sqlglot.parse_one(f"SELECT * FROM {sql}", dialect="duckdb").args["from_"].this
    return found
