"""A model function: one formula, its typed arguments and their domains, in three forms.

`@model(...)` turns a formula written in the `udfs.expr` vocabulary into a `Model`, which is

- a Python function: NULL (None) in any argument gives None; an argument outside its domain
  raises `ValueError("fn: arg must be ..., got value")`; numbers and numpy arrays both work;
- an Arrow function (`Model.arrow`) for engines that call vectorised Python UDFs (Spark, or
  DuckDB on a read-only file that lacks the macros), NULLs per row;
- SQL (`Model.sql_body`): a CASE that gives NULL for NULL input, calls `error()` with the same
  message for a value outside the domain, and otherwise evaluates the formula. The registry
  makes it a DuckDB macro, which DuckDB inlines: it runs within a small factor of the formula
  typed by hand (bench/bench_udfs.py) and folds to a constant for constant arguments.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, Generic, ParamSpec, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udfs.expr import Expr, sql_of
from udfs.params import Param, Relation, SqlType, not_integer_sql

P = ParamSpec("P")
R = TypeVar("R")

_NUMPY_TYPES: dict[str, Any] = {
    "DOUBLE": np.float64,
    "INTEGER": np.float64,  # counts are computed as floats and turned back into integers
    "VARCHAR": np.str_,
    "BOOLEAN": np.bool_,
}
_ARROW_TYPES = {"DOUBLE": pa.float64(), "INTEGER": pa.int32(), "VARCHAR": pa.string()}


class Model(Generic[P, R]):
    """A model function (see the module docstring); call it like the formula it wraps."""

    def __init__(
        self,
        formula: Callable[P, R],
        params: dict[str, Param],
        returns: SqlType,
        units: str,
        example: tuple[Any, ...],
        deterministic: bool = True,
        relations: tuple[Relation, ...] = (),
    ) -> None:
        names = list(inspect.signature(formula).parameters)
        if names != list(params):
            raise TypeError(f"{formula.__name__}: params {list(params)} != arguments {names}")
        if len(example) != len(params):
            raise TypeError(f"{formula.__name__}: the example needs {len(params)} arguments")
        if not formula.__doc__:
            raise TypeError(f"{formula.__name__}: a model needs a docstring (formula, source)")
        self.formula = formula
        self._evaluate: Callable[..., Any] = formula  # on arrays or Exprs, not the declared types
        self.name = formula.__name__
        self.params = params
        self.returns = returns
        self.units = units
        self.example = example
        self.deterministic = deterministic
        self.relations = relations
        self._signature = inspect.signature(formula)
        functools.update_wrapper(self, formula)

    # -- Python --------------------------------------------------------------------------------

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        bound = self._signature.bind(*args, **kwargs)
        raw = [bound.arguments[name] for name in self.params]
        if any(v is None for v in raw):
            return None
        out = self.numpy(*raw)
        return out.item() if all(np.ndim(v) == 0 for v in raw) else out

    def numpy(self, *raw: Any) -> np.ndarray[Any, Any]:
        """The formula over numpy arrays (or numbers): domain-checked, without NULLs."""
        params = list(self.params.values())
        values = [self._convert(name, v) for name, v in zip(self.params, raw, strict=True)]
        with np.errstate(all="ignore"):
            for name, param, value in zip(self.params, params, values, strict=True):
                self._refuse(name, param.expect, param.invalid(value), raw)
            for rule in self.relations:
                self._refuse(rule.argument, rule.expect, ~rule.holds(*values), raw)
            out = np.asarray(self._evaluate(*values))
        out = np.broadcast_to(out, np.broadcast_shapes(*(v.shape for v in values)))
        if self.returns == "INTEGER":
            return out.astype(np.int64)
        return out.astype(np.float64) if self.returns == "DOUBLE" else out

    def _convert(self, name: str, value: Any) -> np.ndarray[Any, Any]:
        param = self.params[name]
        try:
            return np.asarray(value, dtype=_NUMPY_TYPES[param.type])
        except (TypeError, ValueError):
            raise ValueError(self._message(name, param.expect, repr(value))) from None

    def _refuse(self, argument: str, expect: str, bad: Any, raw: Sequence[Any]) -> None:
        bad = np.asarray(bad, dtype=bool)
        if bad.any():
            given = np.broadcast_to(raw[list(self.params).index(argument)], bad.shape)
            first = given.reshape(-1)[int(np.argmax(bad.reshape(-1)))]
            shown = self.params[argument].show(first.item() if hasattr(first, "item") else first)
            raise ValueError(self._message(argument, expect, shown))

    def _message(self, argument: str, expect: str, shown: str) -> str:
        return f"{self.name}: {argument} must be {expect}, got {shown}"

    def arrow(self, *columns: pa.Array | pa.ChunkedArray) -> pa.Array:
        """The formula over Arrow arrays: a NULL in any argument gives NULL in that row."""
        rows = len(columns[0])
        present = np.ones(rows, dtype=bool)
        for column in columns:
            present &= np.asarray(pc.is_valid(column), dtype=bool)
        keep = pa.array(present)
        computed = self.numpy(*(pc.filter(c, keep).to_numpy(zero_copy_only=False) for c in columns))
        if self.returns == "VARCHAR":
            full = np.full(rows, "", dtype=object)
        else:
            full = np.zeros(rows, dtype=computed.dtype)
        full[present] = computed
        return pa.array(full, mask=~present, type=_ARROW_TYPES.get(self.returns))

    # -- SQL -----------------------------------------------------------------------------------

    def sql_body(self) -> str:
        """The macro body: NULL in, NULL out; a domain error names function, argument, value.

        A text argument is checked inside the `pick` that reads it (see `Choice.pick`), so a
        valid row pays one string comparison per distinct value, as a hand-written CASE would.
        """
        refs = {name: self._ref(name) for name in self.params}
        body = sql_of(self._evaluate(*refs.values()))
        # NULL first, so that no NULL reaches error(), least() or a CASE condition
        whens = [f"WHEN {' OR '.join(f'{n} IS NULL' for n in self.params)} THEN NULL"]
        for name, param in self.params.items():
            fail = self._error_sql(name, param.expect)
            if param.type == "INTEGER":
                whens.append(f"WHEN {not_integer_sql(name)} THEN {fail}")
            bad = param.invalid(refs[name])
            if bad is not None and not (param.type == "VARCHAR" and fail in body):
                whens.append(f"WHEN {sql_of(bad)} THEN {fail}")
        for rule in self.relations:
            holds = sql_of(rule.holds(*refs.values()))
            whens.append(f"WHEN NOT {holds} THEN {self._error_sql(rule.argument, rule.expect)}")
        whens.append(f"ELSE {self._cast(body)}")
        return "CASE\n  " + "\n  ".join(whens) + "\nEND"

    def _ref(self, name: str) -> Expr:
        """The argument cast to its type, as the formula sees it."""
        param = self.params[name]
        sql = f"CAST({name} AS {param.type})"
        if param.type == "VARCHAR":
            return Expr(sql, unknown=self._error_sql(name, param.expect))
        return Expr(sql)

    def _cast(self, sql: str) -> str:
        return f"CAST({sql} AS {self.returns})"

    def _error_sql(self, argument: str, expect: str) -> str:
        text = f"CAST({argument} AS VARCHAR)"
        if self.params[argument].type == "VARCHAR":
            text = f"'''' || {text} || ''''"
        return f"error({sql_of(self._message(argument, expect, ''))} || {text})"

    @property
    def signature(self) -> str:
        """`name(arg TYPE, ...)` as SQL_API.md writes it."""
        args = ", ".join(f"{name} {p.type}" for name, p in self.params.items())
        return f"{self.name}({args})"

    @property
    def example_call(self) -> str:
        """The example as SQL a person would type: `pcie_gbs(4, 16)`."""
        return f"{self.name}({', '.join(_typed_literal(v) for v in self.example)})"

    @property
    def meaning(self) -> str:
        """The first line of the docstring."""
        return (self.__doc__ or "").strip().splitlines()[0]


def _typed_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value):
        if value.is_integer() and abs(value) < 1e6:
            return str(int(value))
        if "e" not in repr(value) and not value.is_integer():
            return repr(value)
        shortest = np.format_float_scientific(value, unique=True, trim="-")
        mantissa, exponent = shortest.split("e")
        return f"{mantissa}e{int(exponent)}"  # 7e9, 2.15e25: DOUBLE literals
    return sql_of(value)


def model(
    returns: SqlType,
    units: str,
    *,
    example: tuple[Any, ...],
    deterministic: bool = True,
    relations: tuple[Relation, ...] = (),
    **params: Param,
) -> Callable[[Callable[P, R]], Model[P, R]]:
    """Declare a model function: its return type, units, an example call and its arguments."""

    def wrap(formula: Callable[P, R]) -> Model[P, R]:
        return Model(formula, params, returns, units, example, deterministic, relations)

    return wrap
