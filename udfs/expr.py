"""A tiny expression vocabulary: one model definition, two ways to evaluate it.

A model body is ordinary Python arithmetic over its arguments plus the helpers below. Called with
numbers or numpy arrays it computes values (the pure-Python and vectorised forms); called with
`Expr` arguments it builds the same formula as SQL text, which the registry turns into a DuckDB
macro. So a formula is written once and SQL, Python and numpy cannot disagree on it.

Helpers stand in for what Python control flow would do: `where` instead of `if`, `cases` instead
of `if/elif`, `Choice.pick` instead of a dict lookup on a name. An `Expr` refuses `bool()`, so a
body that branches in Python fails loudly the first time it is rendered.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

#: What a model body computes on: a number, a numpy array, or a symbolic SQL expression.
Num: TypeAlias = "float | npt.NDArray[Any] | Expr"
#: A text argument (collective, bond mode, ...): a string, an array of strings, or an `Expr`.
Text: TypeAlias = "str | npt.NDArray[Any] | Expr"


class Expr:
    """A SQL expression under construction; Python operators build bigger ones.

    >>> x = Expr("x")
    >>> (2 * x + 1).sql
    '((2 * x) + 1)'
    >>> where(x > 0, x, 0.5).sql
    'CASE WHEN (x > 0) THEN x ELSE 5e-01 END'
    """

    __slots__ = ("sql", "unknown")
    #: numpy must not try to broadcast over an Expr; it defers to our reflected operators.
    __array_ufunc__ = None

    def __init__(self, sql: str, *, unknown: str | None = None) -> None:
        self.sql = sql
        self.unknown = unknown  # for a text argument: the SQL that refuses an unknown name

    def __repr__(self) -> str:
        return f"Expr({self.sql!r})"

    def __bool__(self) -> bool:
        raise TypeError(f"a SQL expression has no truth value in Python; use where(): {self.sql}")

    def __add__(self, other: object) -> Expr:
        return _infix("+", self, other)

    def __radd__(self, other: object) -> Expr:
        return _infix("+", other, self)

    def __sub__(self, other: object) -> Expr:
        return _infix("-", self, other)

    def __rsub__(self, other: object) -> Expr:
        return _infix("-", other, self)

    def __mul__(self, other: object) -> Expr:
        return _infix("*", self, other)

    def __rmul__(self, other: object) -> Expr:
        return _infix("*", other, self)

    def __truediv__(self, other: object) -> Expr:
        return _infix("/", self, other)

    def __rtruediv__(self, other: object) -> Expr:
        return _infix("/", other, self)

    def __mod__(self, other: object) -> Expr:
        return _infix("%", self, other)

    def __rmod__(self, other: object) -> Expr:
        return _infix("%", other, self)

    def __pow__(self, other: object) -> Expr:
        return Expr(f"power({sql_of(self)}, {sql_of(other)})")

    def __rpow__(self, other: object) -> Expr:
        return Expr(f"power({sql_of(other)}, {sql_of(self)})")

    def __neg__(self) -> Expr:
        return Expr(f"(- {self.sql})")

    def __lt__(self, other: object) -> Expr:
        return _infix("<", self, other)

    def __le__(self, other: object) -> Expr:
        return _infix("<=", self, other)

    def __gt__(self, other: object) -> Expr:
        return _infix(">", self, other)

    def __ge__(self, other: object) -> Expr:
        return _infix(">=", self, other)

    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        return _infix("=", self, other)

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        return _infix("<>", self, other)

    def __and__(self, other: object) -> Expr:
        return _infix("AND", self, other)

    def __rand__(self, other: object) -> Expr:
        return _infix("AND", other, self)

    def __or__(self, other: object) -> Expr:
        return _infix("OR", self, other)

    def __ror__(self, other: object) -> Expr:
        return _infix("OR", other, self)

    def __invert__(self) -> Expr:
        return Expr(f"(NOT {self.sql})")

    __hash__ = None  # type: ignore[assignment]


def _infix(op: str, left: object, right: object) -> Expr:
    return Expr(f"({sql_of(left)} {op} {sql_of(right)})")


def sql_of(value: object) -> str:
    """SQL text for an `Expr` or a Python constant; floats keep every bit.

    A float is written in exponent form, which DuckDB reads as an exact DOUBLE (a plain `0.9`
    would be a DECIMAL and turn `0.9 * 4` into DECIMAL arithmetic).

    >>> sql_of(0.9), sql_of(2), sql_of(float("inf")), sql_of("it's")
    ('9e-01', '2', "'inf'::DOUBLE", "'it''s'")
    """
    if isinstance(value, Expr):
        return value.sql
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        number = float(value)
        if math.isnan(number) or math.isinf(number):
            return f"'{number}'::DOUBLE"
        return _exponent_form(number)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"cannot write {value!r} as SQL")


def _exponent_form(number: float) -> str:
    # shortest round-trip digits in exponent form: 0.9 -> 9e-01, 31.5 -> 3.15e+01
    return str(np.format_float_scientific(number, unique=True, trim="-"))


def symbolic(*values: object) -> bool:
    """True when any value is an `Expr`, i.e. the formula is being written as SQL."""
    return any(isinstance(v, Expr) for v in values)


def where(condition: Any, then: Any, otherwise: Any) -> Num:
    """`then` where `condition` holds, else `otherwise` (SQL CASE; numpy `where`)."""
    if symbolic(condition, then, otherwise):
        sql = f"CASE WHEN {sql_of(condition)} THEN {sql_of(then)} ELSE {sql_of(otherwise)} END"
        return Expr(sql)
    chosen: npt.NDArray[Any] = np.where(condition, then, otherwise)
    return chosen


def cases(branches: Sequence[tuple[Any, Any]], otherwise: Any = None) -> Num:
    """The value of the first branch whose condition holds, else `otherwise`.

    Without `otherwise` the branches must cover every valid input: SQL gives NULL and numpy NaN
    for anything else.
    """
    conditions = [c for c, _ in branches]
    values = [v for _, v in branches]
    if symbolic(otherwise, *conditions, *values):
        whens = " ".join(f"WHEN {sql_of(c)} THEN {sql_of(v)}" for c, v in branches)
        if otherwise is None:
            return Expr(f"CASE {whens} END")
        return Expr(f"CASE {whens} ELSE {sql_of(otherwise)} END")
    default = math.nan if otherwise is None else otherwise
    conditions = [np.asarray(c, dtype=bool) for c in conditions]
    chosen: npt.NDArray[Any] = np.select(conditions, [np.asarray(v) for v in values], default)
    return chosen


def _function(sql_name: str, numpy_function: Any) -> Callable[..., Num]:
    def apply(*args: Any) -> Num:
        if symbolic(*args):
            return Expr(f"{sql_name}({', '.join(sql_of(a) for a in args)})")
        value: Num = numpy_function(*args)
        return value

    apply.__name__ = sql_name
    apply.__doc__ = f"`{sql_name}` in SQL, `numpy.{numpy_function.__name__}` on numbers."
    return apply


#: `least`/`greatest` skip NULLs; no NULL reaches a formula (the macro returns NULL first).
minimum = _function("least", np.minimum)
maximum = _function("greatest", np.maximum)
sqrt = _function("sqrt", np.sqrt)
exp = _function("exp", np.exp)
ceil = _function("ceil", np.ceil)
floor = _function("floor", np.floor)
log2 = _function("log2", np.log2)
isnan = _function("isnan", np.isnan)


def between(value: Any, low: float, high: float) -> Any:
    """low <= value <= high, reading `value` once; False for NaN in numpy and in DuckDB."""
    if isinstance(value, Expr):
        return Expr(f"({value.sql} BETWEEN {sql_of(low)} AND {sql_of(high)})")
    return (value >= low) & (value <= high)


def lower(text: Any) -> Any:
    """Lower-case text (SQL `lower`, numpy `char.lower`)."""
    if isinstance(text, Expr):
        return Expr(f"lower({text.sql})")
    return np.char.lower(np.asarray(text, dtype=np.str_))


class Choice:
    """A closed set of names a text argument may take, each with its accepted spellings.

    Matching ignores case. `pick` maps each name to a value, like a dict lookup that works on
    arrays and in SQL.

    >>> modes = Choice({"none": (), "802.3ad": ("bond4", "lacp")})
    >>> modes.spellings
    ('none', '802.3ad', 'bond4', 'lacp')
    >>> float(modes.pick("LACP", {"none": 1.0, "802.3ad": 2.0}))
    2.0
    """

    def __init__(self, aliases: Mapping[str, Sequence[str]]) -> None:
        self.aliases = {
            name.lower(): (name.lower(), *(a.lower() for a in more))
            for name, more in aliases.items()
        }
        self.spellings = tuple(s for names in self.aliases.values() for s in names)

    def describe(self) -> str:
        """ "one of 'a' (= 'alias'), 'b', in any case", for error messages and documentation."""
        parts = []
        for name, spellings in self.aliases.items():
            extra = " = ".join(f"'{s}'" for s in spellings[1:])
            parts.append(f"'{name}'" + (f" (= {extra})" if extra else ""))
        return "one of " + ", ".join(parts) + ", in any case"

    def matches(self, text: Any, name: str | None = None) -> Any:
        """Whether `text` spells `name` (any known name when None), ignoring case."""
        spellings = self.aliases[name] if name is not None else self.spellings
        if symbolic(text):
            listed = ", ".join(sql_of(s) for s in spellings)
            return Expr(f"({sql_of(lower(text))} IN ({listed}))")
        return np.isin(lower(text), spellings)

    def pick(self, text: Any, values: Mapping[str, Any]) -> Num:
        """`values[name]` for the name `text` spells (SQL NULL, numpy NaN for unknown text).

        In SQL, names that share a value share one `WHEN ... IN (...)`, so a row tests as few
        conditions as there are distinct values.
        """
        mismatch = set(values) ^ set(self.aliases)
        if mismatch:
            raise KeyError(f"pick must map exactly the names {sorted(self.aliases)}: {mismatch}")
        if not symbolic(text, *values.values()):
            return cases([(self.matches(text, name), value) for name, value in values.items()])
        if not isinstance(text, Expr):
            text = Expr(sql_of(text))
        groups: dict[str, tuple[list[str], Any]] = {}
        for name, value in values.items():
            groups.setdefault(sql_of(value), ([], value))[0].extend(self.aliases[name])
        found = [(", ".join(map(sql_of, spellings)), value) for spellings, value in groups.values()]
        text_sql, lowered = sql_of(text), sql_of(lower(text))
        matched = " ".join(f"WHEN {lowered} IN ({listed}) THEN {sql_of(v)}" for listed, v in found)
        unknown = text.unknown
        if unknown is None:
            sql = f"CASE {matched} END"
        else:
            # exact spellings first (no lower() per row); other rows are lower-cased, and a name
            # that matches nothing raises the argument's error here: no separate check needed
            exact = " ".join(
                f"WHEN {text_sql} IN ({listed}) THEN {sql_of(v)}" for listed, v in found
            )
            fallback = f"CASE {matched} WHEN {text_sql} IS NULL THEN NULL ELSE {unknown} END"
            sql = f"CASE {exact} ELSE {fallback} END"
        return Expr(sql)
