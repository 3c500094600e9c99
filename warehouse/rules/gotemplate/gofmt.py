"""Values printed as Go's fmt prints them: `Sprint` (what a template action writes) and
`Sprintf` (the `printf` function), for the values a rule template holds.

>>> sprint(1000000.0), sprint(0.5), sprint(3.0), sprint(float("inf")), sprint(1e-05)
('1e+06', '0.5', '3', '+Inf', '1e-05')
>>> sprintf("%.2f%% of %s on %d", [93.456, "gpu0", 7])
'93.46% of gpu0 on 7'
>>> sprintf("%d", ["x"]), sprintf("%s %s", ["a"])
('%!d(string=x)', 'a %!s(MISSING)')
>>> sprintf("%.4g|%5.1f|%-4s|%q|%x|%v", [12345.0, 2.25, "ab", "q", 255, {"b": "2", "a": "1"}])
'1.234e+04|  2.2|ab  |"q"|ff|map[a:1 b:2]'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

_VERB = re.compile(r"%([-+# 0]*)(\*|[0-9]+)?(?:\.(\*|[0-9]*))?([a-zA-Z%])")


def go_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]string"
    if value is None:
        return "<nil>"
    return type(value).__name__


def _special(value: float, zero: str) -> str | None:
    """Go's text for NaN, ±Inf and ±0 (`zero` with the sign Go gives it); None otherwise."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-" + zero if math.copysign(1, value) < 0 else zero
    return None


def _shortest(value: float) -> tuple[str, str, int]:
    """A finite non-zero float's sign ('' or '-'), its shortest round-trip digits and the
    decimal exponent of the first digit."""
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    return ("-" if sign else ""), text, len(text) + exponent - 1


def _with_exponent(prefix: str, text: str, exp: int, letter: str) -> str:
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{prefix}{mantissa}{letter}{'-' if exp < 0 else '+'}{abs(exp):02d}"


def float_exp(value: float, letter: str = "e") -> str:
    """strconv.FormatFloat(v, letter, -1, 64), letter 'e' or 'E': the shortest digits with an
    exponent (how Prometheus writes an alert's value, and promtool a sample's)."""
    special = _special(value, f"0{letter}+00")
    if special is not None:
        return special
    return _with_exponent(*_shortest(value), letter)


def float_v(value: float) -> str:
    """Go's %v of a float64: the shortest digits, an exponent below 1e-4 or from 1e6."""
    special = _special(value, "0")
    if special is not None:
        return special
    prefix, text, exp = _shortest(value)
    point = exp + 1  # digits before the decimal point
    if exp < -4 or exp >= 6:  # strconv: shortest digits decide at precision 6
        return _with_exponent(prefix, text, exp, "e")
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def sprint(value: Any) -> str:
    """What Go's fmt.Sprint writes for one value (a template action's output)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return float_v(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if value is None:
        return "<no value>"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{sprint(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(sprint(v) for v in value) + "]"
    if isinstance(value, datetime):
        return go_time(value)
    return str(value)


def go_time(moment: datetime) -> str:
    """time.Time's String in UTC: `2006-01-02 15:04:05.999999999 +0000 UTC`."""
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + " +0000 UTC"


def _g(value: float, precision: int | None, upper: bool = False) -> str:
    if math.isnan(value) or math.isinf(value):
        return float_v(value)
    if precision is None:
        text = float_v(value)
        # %g with the shortest digits switches to an exponent from 1e21 as %v does
        return text.upper() if upper else text
    text = f"%.{max(precision, 1)}g" % value
    return text.upper() if upper else text


def _bad(verb: str, value: Any) -> str:
    return f"%!{verb}({go_type(value)}={sprint(value)})"


_INTEGER_VERBS: dict[str, Callable[[int], str]] = {
    "d": str,
    "b": lambda v: format(v, "b"),
    "o": lambda v: format(v, "o"),
    "x": lambda v: format(v, "x"),
    "X": lambda v: format(v, "X"),
    "c": chr,
}


def _text(verb: str, flags: str, precision: int | None, value: Any) -> str:
    """One operand's text for `verb`, before its width is applied."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if verb == "v":
        return sprint(value)
    if verb == "s":
        return _bad(verb, value) if number else sprint(value)[:precision]
    if verb == "q" and isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if verb == "t":
        return sprint(value) if isinstance(value, bool) else _bad(verb, value)
    if verb in _INTEGER_VERBS:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(_INTEGER_VERBS[verb](value))
        if verb in "xX" and isinstance(value, str):
            hexed = value.encode().hex()
            return hexed.upper() if verb == "X" else hexed
        return _bad(verb, value)
    if verb in "eEfFgG" and number:
        value = float(value)
        if math.isnan(value) or math.isinf(value):
            return float_v(value)
        if verb in "gG":
            return _g(value, precision, verb == "G")
        sign = "+" if "+" in flags else ""
        return str(f"%{sign}.{6 if precision is None else precision}{verb}" % value)
    return _bad(verb, value)


def _one(verb: str, flags: str, width: int | None, precision: int | None, value: Any) -> str:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    text = _text(verb, flags, precision, value)
    if text.startswith("%!"):
        return text
    if "+" in flags and number and verb in "dv" and not text.startswith("-"):
        text = "+" + text
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text.ljust(width)
    if "0" in flags and number:
        sign = text[0] if text[0] in "+-" else ""
        return sign + text[len(sign) :].rjust(width - len(sign), "0")
    return text.rjust(width)


def sprintf(pattern: str, args: list[Any]) -> str:
    """Go's fmt.Sprintf for the verbs templates use (%v %s %q %d %f %e %g %x %t %c %%)."""
    out: list[str] = []
    used = 0
    pos = 0
    for found in _VERB.finditer(pattern):
        out.append(pattern[pos : found.start()])
        pos = found.end()
        flags, width_text, precision_text, verb = found.groups()
        if verb == "%":
            out.append("%")
            continue
        width = precision = None
        if width_text == "*":
            width, used = (args[used] if used < len(args) else 0), used + 1
        elif width_text:
            width = int(width_text)
        if precision_text == "*":
            precision, used = (args[used] if used < len(args) else 0), used + 1
        elif precision_text is not None:
            precision = int(precision_text or 0)
        if used >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        out.append(_one(verb, flags, width, precision, args[used]))
        used += 1
    out.append(pattern[pos:])
    if used < len(args):
        extra = ", ".join(f"{go_type(a)}={sprint(a)}" for a in args[used:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)
