"""An analysis's parameters: declared in its header with a type and a default, typed on use.

    --   $tariff_usd_per_kwh  DOUBLE = 0.12   electricity price, USD per kWh

A value given as text (`--param tariff_usd_per_kwh=0.2`) is converted to the declared type, or
refused with a message naming the parameter, the type and the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from warehouse.errors import UserError

_LINE = re.compile(
    r"^--\s+\$([a-z_][a-z0-9_]*)\s+(DOUBLE|INTEGER|VARCHAR|BOOLEAN|TIMESTAMPTZ)\s*=\s*"
    r"('(?:[^']*)'|\S+)\s+(.+)$"
)
_TRUE = {"true", "t", "yes", "y", "1", "on"}
_FALSE = {"false", "f", "no", "n", "0", "off"}


@dataclass(frozen=True)
class Param:
    """One named parameter: `$name`, its SQL type, default and meaning (with unit)."""

    name: str
    type: str  # DOUBLE | INTEGER | VARCHAR | BOOLEAN | TIMESTAMPTZ
    default: Any
    description: str

    def convert(self, text: str) -> Any:
        """`text` as a value of this parameter's type.

        >>> Param("gpus", "INTEGER", 8, "").convert("1024")
        1024
        >>> Param("gpus", "INTEGER", 8, "").convert("1e3")
        Traceback (most recent call last):
        ...
        warehouse.errors.UserError: parameter gpus is INTEGER: '1e3' is not a whole number
        """
        return convert(self.name, self.type, text)


def convert(name: str, sql_type: str, text: str) -> Any:
    """Text to a Python value of `sql_type`, or a UserError saying what was expected."""
    value = text.strip()
    try:
        if sql_type == "INTEGER":
            return int(value)
        if sql_type == "DOUBLE":
            number = float(value)
            if number != number:
                raise ValueError(value)
            return number
        if sql_type == "BOOLEAN":
            if value.lower() in _TRUE | _FALSE:
                return value.lower() in _TRUE
            raise ValueError(value)
        if sql_type == "TIMESTAMPTZ":
            parsed = datetime.fromisoformat(value)
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except ValueError:
        expected = {
            "INTEGER": "a whole number",
            "DOUBLE": "a number",
            "BOOLEAN": "true or false",
            "TIMESTAMPTZ": "an ISO 8601 time",
        }[sql_type]
        raise UserError(f"parameter {name} is {sql_type}: {text!r} is not {expected}") from None
    return value  # VARCHAR


def parse_param_line(line: str, where: str) -> Param:
    """One `--   $name TYPE = default  description` header line.

    >>> parse_param_line("--   $cluster  VARCHAR = 'philly'  the trace's cluster", "f:3")
    Param(name='cluster', type='VARCHAR', default='philly', description="the trace's cluster")
    """
    found = _LINE.match(line)
    if not found:
        raise ValueError(
            f"{where}: expected '--   $name TYPE = default  description' "
            "(TYPE one of DOUBLE, INTEGER, VARCHAR, BOOLEAN, TIMESTAMPTZ)"
        )
    name, sql_type, default, description = found.groups()
    if default.startswith("'") and default.endswith("'"):
        default = default[1:-1]
    try:
        value = convert(name, sql_type, default)
    except UserError as error:
        raise ValueError(f"{where}: default of {error}") from None
    return Param(name, sql_type, value, description.strip())


def bind(params: tuple[Param, ...], given: dict[str, str], analysis: str) -> dict[str, Any]:
    """Every declared parameter's value: the given text converted, else the default.

    A name not declared is refused, listing the declared ones.
    """
    declared = {p.name: p for p in params}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        known = ", ".join(declared) or "none"
        raise UserError(
            f"analysis {analysis} has no parameter {unknown[0]!r} (parameters: {known})"
        )
    return {
        name: (p.convert(given[name]) if name in given else p.default)
        for name, p in declared.items()
    }


def parse_assignments(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """`k=v` strings (as `--param` gives them) as a dict; a pair without `=` is refused.

    >>> parse_assignments(["tariff_usd_per_kwh=0.2", "cluster=philly"])
    {'tariff_usd_per_kwh': '0.2', 'cluster': 'philly'}
    """
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UserError(f"--param {pair!r}: expected NAME=VALUE")
        out[name.strip().lstrip("$")] = value
    return out
