"""Portable SQL: a DuckDB-dialect query translated for Spark, or the reasons it cannot be.

Dynamic-table and analysis SQL is written once, in DuckDB's dialect. `to_spark` runs sqlglot's
transpile plus wanka's rewrites (`spark_rewrites.RULES`); `portability_problems` names every
construct that Spark cannot run or would run differently, with the portable alternative, so
that a dynamic table learns it at CREATE — never in a scheduled refresh, never silently.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from udfs.registry import REGISTRY
from warehouse.engines.spark_rewrites import RULES, bucket_width_s
from warehouse.kernel.tables import declared

#: DuckDB functions (as sqlglot leaves them: Anonymous) with no faithful Spark form.
_NO_SPARK_FORM = {
    "histogram": "histogram(x) has no Spark equivalent: GROUP BY x with count(*)",
    "list_distinct": "list_distinct(l) orders differently: use array_distinct after sorting",
    "arg_min_null": "arg_min_null(...): use min_by with an explicit NULL filter",
}
_APPROXIMATE = (exp.ApproxDistinct, exp.ApproxQuantile)
#: wanka's AI functions (warehouse/ai: ai_embed, ai_classify, ai_gen, ...; sqlglot knows some of
#: the names as Snowflake's), bound on DuckDB connections only.
AI_PREFIX = "ai_"
#: How a problem says a query reads what no lake holds (wanka's own tables).
UNCARRIED = "which the lake does not carry"
_MODEL_NAMES = frozenset(m.name for m in REGISTRY)


class NotPortable(ValueError):
    """A query Spark cannot run as DuckDB does; `problems` says what and what to use instead."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@functools.cache
def _spark_functions() -> frozenset[str]:
    """Spark's built-in SQL function names, from PySpark's function module (no JVM needed)."""
    import pyspark.sql.functions as functions  # imported late: Spark is an optional engine

    names = {n.lower() for n in dir(functions) if not n.startswith("_")}
    return frozenset(names | {"percentile", "unix_micros", "unix_millis", "struct", "if"})


def _parse(select_sql: str) -> exp.Expression:
    return cast(exp.Expression, sqlglot.parse_one(select_sql, read="duckdb"))


def problems(tree: exp.Expression, text: str = "") -> list[str]:
    """What in a DuckDB-dialect tree no rule can carry to Spark unchanged in meaning.

    `text` is the SQL the tree was parsed from: sqlglot parses `len` and `length` alike.
    """
    found: list[str] = []

    def add(text: str) -> None:
        if text not in found:
            found.append(text)

    for node in tree.walk():
        if isinstance(node, exp.DateBin):
            add_bucket_problem(node, add)
            continue
        problem = _syntax_problem(node) or _function_problem(node, text)
        if problem:
            add(problem)
    return found


def _syntax_problem(node: exp.Expr) -> str | None:
    """DuckDB-only syntax: ASOF, PIVOT, COLUMNS, * EXCLUDE, list slices, unnest before joins."""
    if isinstance(node, exp.Join) and node.text("method").upper() == "ASOF":
        return "ASOF JOIN is DuckDB-only: use a window (max_by over the earlier rows) instead"
    if isinstance(node, exp.Pivot):
        return "PIVOT/UNPIVOT is DuckDB-only here: use sum(x) FILTER (WHERE k = 'v') per column"
    if isinstance(node, exp.Columns):
        return "COLUMNS(...) is DuckDB-only: name the columns"
    if isinstance(node, exp.Star) and (node.args.get("except_") or node.args.get("replace")):
        return "SELECT * EXCLUDE/REPLACE is DuckDB-only: name the columns"
    if isinstance(node, exp.Bracket) and any(isinstance(e, exp.Slice) for e in node.expressions):
        return "list slices l[a:b] differ (1-based, inclusive): use slice(l, a, b - a + 1)"
    if isinstance(node, exp.Select) and _unnest_joined_before(node):
        return (
            "FROM t, unnest(t.list) AS u(x) JOIN ... ON u.x: Spark applies the unnest (LATERAL "
            "VIEW) after the joins: unnest in a subquery first, then join it"
        )
    return None


def _function_problem(node: exp.Expr, text: str) -> str | None:
    """Functions whose meaning differs between the engines, or that Spark lacks."""
    if isinstance(node, exp.DateDiff):
        return (
            "date_diff counts unit boundaries in DuckDB and elapsed units in Spark: use "
            "(epoch(b) - epoch(a)) / <seconds per unit>"
        )
    if isinstance(node, exp.Length) and _called_as(node, text, "len"):
        return "len(x) is ambiguous in Spark: use length(text) or array_length(list)"
    if isinstance(node, _APPROXIMATE):
        return (
            f"{node.sql('duckdb').split('(')[0]} is approximate with a different algorithm "
            "in each engine: use the exact form (count(DISTINCT x), quantile_cont)"
        )
    if isinstance(node, exp.GroupConcat) and not isinstance(node.this, exp.Order):
        return "string_agg without ORDER BY joins in an engine-specific order: add ORDER BY"
    if isinstance(node, exp.ArrayAgg) and not isinstance(node.this, exp.Order):
        return "list(x) without ORDER BY collects in an engine-specific order: add ORDER BY"
    if isinstance(node, exp.ArrayAgg) and (
        len({bool(o.args.get("desc")) for o in node.this.expressions}) > 1
    ):
        return "list(x ORDER BY a, b DESC): mixed directions are DuckDB-only: use one direction"
    if isinstance(node, exp.Func):
        name = node.name.lower() if isinstance(node, exp.Anonymous) else node.sql_name().lower()
        if name.startswith(AI_PREFIX):
            return f"{name}() is one of wanka's AI functions, which only DuckDB binds"
    if isinstance(node, exp.Anonymous):
        return _NO_SPARK_FORM.get(node.name.lower())
    return None


def _unnest_joined_before(select: exp.Select) -> bool:
    """An unnest in the FROM list with further joins after it (that may use its columns)."""
    joins = select.args.get("joins") or []
    places = [i for i, j in enumerate(joins) if isinstance(j.this, exp.Unnest)]
    return bool(places) and places[0] < len(joins) - 1


def add_bucket_problem(node: exp.DateBin, add: Callable[[str], None]) -> None:
    """time_bucket forms the rules cannot translate: an origin, or a width not dividing a day."""
    width = bucket_width_s(node.this)
    if node.args.get("unit") is not None:
        add("time_bucket with an origin or offset is DuckDB-only: use date_trunc or no origin")
    elif width is None or 86400 % width[0]:
        add(
            f"time_bucket({node.this.sql('duckdb')}, ...) is portable only for widths that "
            "divide a day (1 second … 1 day): use date_trunc('week'|'month', ts)"
        )


def _called_as(node: exp.Expression, text: str, name: str) -> bool:
    start, end = node.meta.get("start"), node.meta.get("end")
    if start is None or end is None:
        return True  # unknown spelling: the careful answer
    return text[start : end + 1].lower() == name


def _unknown_functions(tree: exp.Expression) -> list[str]:
    known = _spark_functions()
    return [
        f"function {node.name}() is not known to Spark: write it with portable functions"
        for node in tree.find_all(exp.Anonymous)
        if node.name.lower() not in known | _MODEL_NAMES | set(_NO_SPARK_FORM)
    ]


def rewrite(
    select_sql: str, values: dict[str, object] | None = None
) -> tuple[exp.Expression, list[str]]:
    """The query's tree after wanka's rules, and the problems no rule solves.

    `values` bind `$name` parameters to literals first (Spark SQL has no such parameters).
    """
    try:
        tree = _parse(select_sql)
    except SqlglotError as error:
        return exp.select("1"), [f"cannot parse the query: {error}"]
    if values:
        tree = _bind(tree, values)
    found = problems(tree, select_sql) + _own_tables(tree)
    for rule in RULES:
        tree = rule(tree)
    for problem in _unknown_functions(tree):
        if problem not in found:
            found.append(problem)
    return tree, found


def _own_tables(tree: exp.Expression) -> list[str]:
    """Tables of wanka's own schema (settings such as wanka.efficiency_rules): the lake holds
    base, reference and dynamic tables only."""
    found = []
    views = {t.name for t in declared() if t.view and not t.lake}
    # declared tables `wanka export --lake` does not write (fault history, risk settings, ...)
    unexported = {t.name for t in declared() if not (t.view or t.lake or t.reference)}
    for table in tree.find_all(exp.Table):
        problem = None
        if table.db.lower() == "wanka":
            problem = (
                f"wanka.{table.name} is wanka's own table, {UNCARRIED}: "
                "pass its values as parameters"
            )
        elif not table.db and table.name.lower() in views:
            problem = f"{table.name} is a view over wanka's own tables, {UNCARRIED}"
        elif not table.db and table.name.lower() in unexported:
            problem = f"{table.name} is not exported to the lake, {UNCARRIED}"
        if problem and problem not in found:
            found.append(problem)
    return found


def portability_problems(select_sql: str, values: dict[str, object] | None = None) -> list[str]:
    """Every construct of `select_sql` (DuckDB dialect) that Spark cannot run as DuckDB does.

    Empty when the query is portable. Each problem names the construct and the alternative.

    >>> portability_problems("SELECT time_bucket(INTERVAL '1 hour', ts) AS h FROM gpu_metrics")
    []
    >>> portability_problems("SELECT histogram(gpu) FROM gpu_metrics")
    ['histogram(x) has no Spark equivalent: GROUP BY x with count(*)']
    """
    tree, found = rewrite(select_sql, values)
    if not found:
        try:
            tree.sql("spark", unsupported_level=ErrorLevel.RAISE)
        except SqlglotError as error:
            found.append(f"sqlglot cannot write this for Spark: {error}")
    return found


def to_spark(select_sql: str, values: dict[str, object] | None = None) -> str:
    """`select_sql` in Spark SQL, with the same results; raises NotPortable otherwise.

    >>> to_spark("SELECT quantile_cont(value, 0.9) AS p90 FROM main.gpu_metrics")
    'SELECT PERCENTILE(value, CAST(0.9 AS DOUBLE)) AS p90 FROM gpu_metrics'
    """
    tree, found = rewrite(select_sql, values)
    if found:
        raise NotPortable(found)
    try:
        return tree.sql("spark", unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as error:
        raise NotPortable([f"sqlglot cannot write this for Spark: {error}"]) from None


def bind_literals(select_sql: str, values: dict[str, object]) -> str:
    """`$name` parameters of a DuckDB-dialect query replaced by literal values.

    Spark SQL has no named parameters of this form; analyses pass their defaults this way.

    >>> bind_literals("SELECT * FROM nodes WHERE $cluster = '' OR cluster = $cluster",
    ...               {"cluster": "a"})
    "SELECT * FROM nodes WHERE 'a' = '' OR cluster = 'a'"
    """
    return _bind(_parse(select_sql), values).sql("duckdb")


def _bind(tree: exp.Expression, values: dict[str, object]) -> exp.Expression:
    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and node.name in values:
            value = values[node.name]
            if isinstance(value, float) and value == float("inf"):
                return exp.cast(exp.Literal.string("inf"), exp.DType.DOUBLE)
            return cast(exp.Expression, exp.convert(value))
        return node

    return tree.transform(rewrite)


def spark_columns(select_sql: str) -> dict[str, object]:
    """`spark_portable` and `spark_reason`, as recorded for a dynamic table at CREATE.

    >>> spark_columns("SELECT host, count(*) AS n FROM gpu_metrics GROUP BY host")
    {'spark_portable': True, 'spark_reason': None}
    """
    found = portability_problems(select_sql)
    return {"spark_portable": not found, "spark_reason": "; ".join(found) if found else None}
