"""The pieces a translation builds: the evaluation grid, values (vectors, scalars, strings) as
named CTEs, and the plan that collects those CTEs into one query.

A vector is two relations: its series `(sid BIGINT, labels MAP(VARCHAR, VARCHAR))`, labels in
sorted key order so equal label sets compare equal, and its points `(sid, k BIGINT, v DOUBLE)`,
`k` the index of the evaluation step. Label work (by, without, dropping `__name__`,
label_replace, matching) touches only the series; points stay integers and doubles.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class PromQLError(Exception):
    """A query Prometheus would refuse: `kind` is its errorType (bad_data, execution, ...)."""

    def __init__(self, message: str, kind: str = "bad_data") -> None:
        super().__init__(message)
        self.kind = kind


class Unsupported(PromQLError):
    """A construct wanka does not evaluate (yet): a 422 naming it, never a wrong answer."""

    def __init__(self, construct: str) -> None:
        super().__init__(f"{construct} is not supported by wanka's PromQL", "execution")


@dataclass(frozen=True)
class Grid:
    """Evaluation steps start_ms + k * step_ms for k in 0..last."""

    start_ms: int
    end_ms: int
    step_ms: int

    @property
    def last(self) -> int:
        return (self.end_ms - self.start_ms) // self.step_ms

    def t(self, k: str = "k") -> str:
        """SQL for the step's time in ms."""
        return f"({self.start_ms} + {k} * {self.step_ms})"


@dataclass(frozen=True)
class Vector:
    series: str  # CTE: sid, labels
    points: str  # CTE: sid, k, v (and st, the sample's own time in ms, for a selector)
    named: bool = True  # may carry __name__ (False once a function or operator dropped it)
    sample_times: bool = False  # points carry st
    metric: str | None = None  # the one metric name every series has, when known


@dataclass(frozen=True)
class Scalar:
    """One value per step: `points` a CTE (k, v), or `value` a constant."""

    points: str | None = None
    value: float | None = None

    def sql(self, k: str = "k") -> str:
        """An expression for the value at step `k` (a scalar subquery for a computed one)."""
        if self.value is not None:
            return literal(self.value)
        return f"(SELECT v FROM {self.points} WHERE {self.points}.k = {k})"


@dataclass(frozen=True)
class String:
    value: str


Value = Vector | Scalar | String


@dataclass
class Plan:
    """The CTEs of one query, in the order they were added."""

    grid: Grid
    ctes: list[tuple[str, str]] = field(default_factory=list)

    def add(self, prefix: str, sql: str, *, inline: bool = False) -> str:
        """A CTE of `sql`; `inline`: written into each query that reads it (NOT MATERIALIZED),
        so that a column no reader needs is never computed."""
        name = f"{prefix}{len(self.ctes)}"
        self.ctes.append((f"{name} AS NOT MATERIALIZED" if inline else f"{name} AS", sql))
        return name

    def query(self, tail: str) -> str:
        if not self.ctes:
            return tail
        body = ",\n".join(f"{head} (\n{sql}\n)" for head, sql in self.ctes)
        return f"WITH {body}\n{tail}"

    def steps(self) -> str:
        """A CTE of every step index of the grid."""
        return self.add("steps", f"SELECT range AS k FROM range(0, {self.grid.last + 1})")


def literal(value: float) -> str:
    """A DOUBLE literal, NaN and the infinities included."""
    if value != value:
        return "'NaN'::DOUBLE"
    if value in (float("inf"), float("-inf")):
        return "'Infinity'::DOUBLE" if value > 0 else "'-Infinity'::DOUBLE"
    return f"{value!r}::DOUBLE"


def text(value: str) -> str:
    """A VARCHAR literal."""
    return "'" + value.replace("'", "''") + "'"


def text_list(values: list[str]) -> str:
    return "[" + ", ".join(text(v) for v in values) + "]::VARCHAR[]"
