"""How far back in time a row of a joined table can reach into the fact table's rows.

A dynamic table over `facts f JOIN intervals a ON ... WHERE f.ts >= a.start_at ...` groups by a
time bucket of f.ts. When a row of `a` changes, only the fact rows it can join may move between
groups, and the conditions say how early those are: no earlier than `a.start_at`. `reach`
derives that bound from the query's conditions (WHERE and every ON) as an expression over the
joined row alone, so a refresh can recompute the buckets from the earliest changed row's bound
on instead of every bucket (warehouse/dynamic/refresh.py).

The derivation is sound by construction: a fact row joins a row only when the whole condition is
true, so
- `x AND y` true: both are, so the later of their bounds holds;
- `x OR y` true: one is, so the earlier holds (none when either has none);
- a CASE whose tests read only the joined row: the branch that row takes;
  any other CASE: the earliest of its branches;
- `f.t >= e`, `f.t > e`, `f.t = e`, `e <= f.t`, `e < f.t`, `f.t BETWEEN e AND ...`, with `e`
  reading only the joined row: `e`;
- anything else: no bound.
The expression is NULL for a row with no bound (a NULL `e` too: the comparison is then never
true, so NULL is only cautious). `None` means no row has one.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["reach"]


def reach(select: exp.Select, fact: str, column: str, joined: str) -> exp.Expr | None:
    """The earliest `fact`.`column` a row of `joined` can join (aliases as the query names the
    tables), as an expression over `joined`'s columns; None when the query gives no bound."""
    conditions = [j.args["on"] for j in select.args.get("joins") or [] if j.args.get("on")]
    where = select.args.get("where")
    if where is not None:
        conditions.append(where.this)
    if not conditions:
        return None
    return _Reach(fact.lower(), column.lower(), joined.lower()).of(exp.and_(*conditions))


class _Reach:
    def __init__(self, fact: str, column: str, joined: str) -> None:
        self.fact, self.column, self.joined = fact, column, joined

    def of(self, cond: exp.Expr) -> exp.Expr | None:
        if isinstance(cond, exp.Paren):
            return self.of(cond.this)
        if isinstance(cond, exp.And):
            return _later(self.of(cond.this), self.of(cond.expression))
        if isinstance(cond, exp.Or):
            return _earlier([self.of(cond.this), self.of(cond.expression)])
        if isinstance(cond, exp.Case) and cond.this is None:
            return self._case(cond)
        if isinstance(cond, exp.Between) and self._is_time(cond.this):
            return self._bound(cond.args["low"])
        if isinstance(cond, exp.GTE | exp.GT | exp.EQ) and self._is_time(cond.this):
            return self._bound(cond.expression)
        if isinstance(cond, exp.LTE | exp.LT | exp.EQ) and self._is_time(cond.expression):
            return self._bound(cond.this)
        return None

    def _case(self, case: exp.Case) -> exp.Expr | None:
        ifs = case.args.get("ifs") or []
        bounds = [self.of(branch.args["true"]) for branch in ifs]
        default = case.args.get("default")
        bounds.append(self.of(default) if default is not None else None)
        if all(b is None for b in bounds):
            return None
        if not all(self._reads_joined_only(branch.this) for branch in ifs):
            return _earlier(bounds)
        tests = [branch.this.copy() for branch in ifs]
        return exp.Case(
            ifs=[exp.If(this=t, true=_or_null(b)) for t, b in zip(tests, bounds[:-1], strict=True)],
            default=_or_null(bounds[-1]),
        )

    def _is_time(self, node: exp.Expr) -> bool:
        return (
            isinstance(node, exp.Column)
            and node.name.lower() == self.column
            and node.table.lower() == self.fact
        )

    def _bound(self, node: exp.Expr) -> exp.Expr | None:
        return node.copy() if self._reads_joined_only(node) else None

    def _reads_joined_only(self, node: exp.Expr) -> bool:
        """Whether `node` is a plain expression of the joined row's columns (and constants)."""
        if any(node.find_all(exp.Query, exp.AggFunc, exp.Window, exp.Placeholder)):
            return False
        columns = list(node.find_all(exp.Column))
        return all(c.table.lower() == self.joined for c in columns)


def _or_null(bound: exp.Expr | None) -> exp.Expr:
    return bound.copy() if bound is not None else exp.null()


def _later(left: exp.Expr | None, right: exp.Expr | None) -> exp.Expr | None:
    """Both hold: the later bound (DuckDB's greatest skips a NULL, an unbounded side)."""
    if left is None or right is None:
        return left or right
    return exp.Anonymous(this="greatest", expressions=[left, right])  # as DuckDB means it


def _earlier(bounds: list[exp.Expr | None]) -> exp.Expr | None:
    """One holds: the earliest bound, NULL (none) when any of them is."""
    if any(b is None for b in bounds):
        return None
    found = [b for b in bounds if b is not None]
    unbounded = exp.or_(*[exp.Is(this=b.copy(), expression=exp.null()) for b in found])
    return exp.Case(
        ifs=[exp.If(this=unbounded, true=exp.null())],
        default=exp.Anonymous(this="least", expressions=[b.copy() for b in found]),
    )
