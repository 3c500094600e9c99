"""The arguments of a model function: SQL type, domain, units, and rules between them.

A number's domain is a closed interval [low, high] (an open end is stored as the next float
inward); a count is also an integer that fits SQL's INTEGER; a text argument is one of the names
of a `Choice`, in any case. `Param.invalid` states the domain once, for numpy and for SQL.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from udfs.expr import Choice, Expr, between, sql_of

SqlType = Literal["DOUBLE", "INTEGER", "VARCHAR", "BOOLEAN"]

#: Integer types whose every value fits an INTEGER, and those that may not.
_NARROW_INTEGERS = ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT")
_WIDE_INTEGERS = ("BIGINT", "HUGEINT", "UINTEGER", "UBIGINT", "UHUGEINT")
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Param:
    """One argument: its SQL type, its domain, and its units (for the docs).

    A number's domain is the closed interval [low, high] (an open end is stored as the next
    float inward), tested with one `BETWEEN`, which reads the argument once and, unlike `>`,
    refuses NaN: DuckDB sorts NaN above +inf.
    """

    type: SqlType
    expect: str
    low: float | None = None
    high: float | None = None
    choice: Choice | None = None
    units: str = ""

    def invalid(self, value: Any) -> Any:
        """Boolean (array or `Expr`) that holds where `value` is outside the domain."""
        checks: list[Any] = []
        if self.type == "INTEGER" and not isinstance(value, Expr):
            # SQL tests integrality on the argument before its cast (see not_integer_sql)
            checks.append(~np.isfinite(value) | (value != np.trunc(value)))
        if self.low is not None and self.high is not None:
            checks.append(~between(value, self.low, self.high))
        if self.choice is not None:
            checks.append(~self.choice.matches(value))
        return functools.reduce(lambda a, b: a | b, checks) if checks else None

    def show(self, value: Any) -> str:
        """A bad value as an error message writes it (text quoted, as SQL writes it)."""
        return f"'{value}'" if self.type == "VARCHAR" else str(value)


def _above(number: float) -> float:
    return float(np.nextafter(number, math.inf))


def _below(number: float) -> float:
    return float(np.nextafter(number, -math.inf))


def positive(units: str = "") -> Param:
    return Param("DOUBLE", "a number > 0", _above(0.0), math.inf, units=units)


def non_negative(units: str = "") -> Param:
    return Param("DOUBLE", "a number >= 0", 0.0, math.inf, units=units)


def at_least(low: float, units: str = "") -> Param:
    return Param("DOUBLE", f"a number >= {low:g}", low, math.inf, units=units)


def fraction(units: str = "fraction", *, open_low: bool = False, open_high: bool = False) -> Param:
    low, high = (_above(0.0) if open_low else 0.0), (_below(1.0) if open_high else 1.0)
    interval = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
    return Param("DOUBLE", f"a number in {interval}", low, high, units=units)


def integer(low: int = 1, high: int | None = None, units: str = "") -> Param:
    if high is None:
        return Param("INTEGER", f"an integer >= {low}", low, _INT32_MAX, units=units)
    return Param("INTEGER", f"an integer from {low} to {high}", low, high, units=units)


def flag(units: str = "") -> Param:
    return Param("BOOLEAN", "true or false", units=units)


def choice(names: Choice, units: str = "") -> Param:
    return Param("VARCHAR", names.describe(), choice=names, units=units)


@dataclass(frozen=True)
class Relation:
    """A rule between arguments (free GPUs cannot exceed GPUs per node).

    `holds` takes every argument of the model in order; `argument` is the one an error blames.
    """

    argument: str
    expect: str
    holds: Callable[..., Any]


def not_integer_sql(name: str) -> str:
    """SQL that holds when a count argument is fractional or does not fit an INTEGER.

    typeof() folds at bind time, so for an INTEGER column the test is FALSE and vanishes, and
    for a BIGINT one it is one range comparison.
    """
    as_double = f"CAST({name} AS DOUBLE)"
    out_of_range = f"NOT ({as_double} BETWEEN {-_INT32_MAX} AND {_INT32_MAX})"
    narrow = ", ".join(map(sql_of, _NARROW_INTEGERS))
    wide = ", ".join(map(sql_of, _WIDE_INTEGERS))
    return (
        f"CASE WHEN typeof({name}) IN ({narrow}) THEN FALSE "
        f"WHEN typeof({name}) IN ({wide}) THEN {out_of_range} "
        f"ELSE {out_of_range} OR {as_double} <> trunc({as_double}) END"
    )
