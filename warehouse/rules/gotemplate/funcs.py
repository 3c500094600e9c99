"""The functions a Prometheus 2.42 rule template may call: Go's builtins and Prometheus's own
(`query`, `humanize*`, `reReplaceAll`, ...), each as Prometheus defines it.

>>> humanize(1234567.0), humanize(0.00123), humanize1024(2048.0), humanizePercentage(0.1234)
('1.235M', '1.23m', '2ki', '12.34%')
>>> humanizeDuration(93784.0), humanizeDuration(0.25), humanizeTimestamp(0)
('1d 2h 3m 4s', '250ms', '1970-01-01 00:00:00 +0000 UTC')
>>> title("gpu xid_79 error"), stripPort("node1:9400"), stripDomain("a.b.c:80")
('Gpu Xid_79 Error', 'node1', 'a:80')
"""

from __future__ import annotations

import html
import ipaddress
import json
import math
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from warehouse.rules import durations
from warehouse.rules.gotemplate import gofmt


class CallError(ValueError):
    """A function that failed: Go's template wraps it as `error calling NAME: why`."""


@dataclass
class Sample:
    """One element of `query`'s result: its labels (`__name__` included) and value."""

    Labels: dict[str, str] = field(default_factory=dict)
    Value: float = 0.0


def _float(value: Any) -> float:
    """Prometheus's convertToFloat: a number, or a string strconv.ParseFloat reads."""
    if isinstance(value, bool):
        raise CallError(f"can't convert {gofmt.go_type(value)} to float")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace("_", "x") if "_" in value else value)
        except ValueError:
            raise CallError(f'strconv.ParseFloat: parsing "{value}": invalid syntax') from None
    raise CallError(f"can't convert {gofmt.go_type(value)} to float")


def _g4(value: float) -> str:
    return gofmt.sprintf("%.4g", [value])


def humanize(value: Any) -> str:
    v = _float(value)
    if v == 0 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    prefix = ""
    if abs(v) >= 1:
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(v) < 1000:
                break
            prefix, v = p, v / 1000
        return _g4(v) + prefix
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return _g4(v) + prefix


def humanize1024(value: Any) -> str:
    v = _float(value)
    if abs(v) <= 1 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    prefix = ""
    for p in ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"):
        if abs(v) < 1024:
            break
        prefix, v = p, v / 1024
    return _g4(v) + prefix


def humanizeDuration(value: Any) -> str:
    v = _float(value)
    if math.isnan(v) or math.isinf(v):
        return _g4(v)
    if v == 0:
        return _g4(v) + "s"
    if abs(v) >= 1:
        sign = "-" if v < 0 else ""
        whole = int(abs(v))
        s, m, h, d = whole % 60, whole // 60 % 60, whole // 3600 % 24, whole // 86400
        if d:
            return f"{sign}{d}d {h}h {m}m {s}s"
        if h:
            return f"{sign}{h}h {m}m {s}s"
        if m:
            return f"{sign}{m}m {s}s"
        return f"{sign}{_g4(abs(v))}s"
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix, v = p, v * 1000
    return f"{_g4(v)}{prefix}s"


def humanizePercentage(value: Any) -> str:
    return _g4(_float(value) * 100) + "%"


def _time(v: float) -> datetime:
    if math.isnan(v) or math.isinf(v):
        raise CallError("value is NaN or Inf")
    if v > 2**63 / 1e9 or v < -(2**63) / 1e9:
        raise CallError(f"{gofmt.float_v(v)} cannot be represented as a nanoseconds timestamp")
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=round(v * 1e6))


def humanizeTimestamp(value: Any) -> str:
    v = _float(value)
    if math.isnan(v) or math.isinf(v):
        return _g4(v)
    return gofmt.go_time(_time(v))


def toTime(value: Any) -> datetime:
    return _time(_float(value))


def title(text: str) -> str:
    """strings.Title: the first letter of each word upper-cased (a word starts after a
    character that is not a letter, digit, underscore or apostrophe-free ASCII)."""
    out, previous = [], " "
    for char in text:
        separator = (
            not (previous.isalnum() or previous == "_")
            if previous.isascii()
            else (previous.isspace())
        )
        out.append(char.upper() if separator else char)
        previous = char
    return "".join(out)


def stripPort(host_port: str) -> str:
    host, _, ok = _split_host_port(host_port)
    return host if ok else host_port


def stripDomain(host_port: str) -> str:
    host, port, ok = _split_host_port(host_port)
    if not ok:
        host, port = host_port, ""
    try:
        ipaddress.ip_address(host)
        return host_port
    except ValueError:
        pass
    host = host.split(".")[0]
    return f"{host}:{port}" if port else host


def _split_host_port(text: str) -> tuple[str, str, bool]:
    found = re.fullmatch(r"\[([^\]]*)\]:([^:]*)|([^:\[\]]*):([^:\[\]]*)", text)
    if found is None:
        return text, "", False
    return (found[1], found[2], True) if found[1] is not None else (found[3], found[4], True)


def _go_regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(re.sub(r"\$\{(\w+)\}|\$(\w+)", r"\\g<\1\2>", pattern))
    except re.error as error:
        raise CallError(f"error parsing regexp: {error}") from None


def reReplaceAll(pattern: str, replacement: str, text: str) -> str:
    """Go's Regexp.ReplaceAllString: `$1` / `${name}` in the replacement name groups."""
    compiled = _go_regex(pattern)
    python = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: f"\\g<{m[1] or m[2]}>", replacement)
    try:
        return compiled.sub(python, text)
    except (re.error, IndexError):
        return compiled.sub("", text)


def match(pattern: str, text: str) -> bool:
    return _go_regex(pattern).search(text) is not None


def parseDuration(text: str) -> float:
    try:
        return durations.parse_ms(text) / 1000
    except durations.BadDuration as error:
        raise CallError(str(error)) from None


def first(result: list[Sample]) -> Sample:
    if not result:
        raise CallError("first() called on vector with no elements")
    return result[0]


def _link(expression: str, tab: int) -> str:
    return f"/graph?g0.expr={urllib.parse.quote_plus(expression)}&g0.tab={tab}"


def truth(value: Any) -> bool:
    """Go template truth: false, 0, "", nil and empty collections are false."""
    if value is None:
        return False
    if isinstance(value, (bool, int, float, str, dict, list)):
        return bool(value)
    return True


def _compare(name: str) -> Callable[..., bool]:
    def compare(a: Any, *others: Any) -> bool:
        if name in ("eq",) and not others:
            raise CallError("missing argument for comparison")
        for b in others if name == "eq" else others[:1]:
            kinds = {_kind(a), _kind(b)}
            if len(kinds) > 1:
                raise CallError("incompatible types for comparison")
            if name == "eq" and a == b:
                return True
            if name != "eq":
                return bool(
                    {"ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[name]
                )
        return False

    return compare


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    raise CallError("invalid type for comparison")


def _index(item: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(item, dict):
            item = item.get(key, "")
        elif isinstance(item, (list, str)):
            if not isinstance(key, int) or not 0 <= key < len(item):
                raise CallError(f"index out of range: {key}")
            item = item[key]
        else:
            raise CallError(f"can't index item of type {gofmt.go_type(item)}")
    return item


def _slice(item: Any, *bounds: int) -> Any:
    if not isinstance(item, (list, str)) or len(bounds) > 3:
        raise CallError(f"can't slice item of type {gofmt.go_type(item)}")
    return item[slice(*bounds)] if bounds else item


def _len(item: Any) -> int:
    if isinstance(item, (dict, list, str)):
        return len(item)
    raise CallError(f"len of type {gofmt.go_type(item)}")


def _println(*args: Any) -> str:
    return " ".join(gofmt.sprint(a) for a in args) + "\n"


def _print(*args: Any) -> str:
    # Go's Sprint puts a space between operands when neither is a string
    out = ""
    for i, a in enumerate(args):
        if i and not isinstance(a, str) and not isinstance(args[i - 1], str):
            out += " "
        out += gofmt.sprint(a)
    return out


def functions(
    query: Callable[[str], list[Sample]], external_url: str
) -> dict[str, Callable[..., Any]]:
    """Every function a template may call; `query` runs PromQL at the evaluation's time."""
    path = urllib.parse.urlparse(external_url).path
    return {
        # Go's text/template builtins (`and` / `or` are evaluated lazily in `execute`)
        "not": lambda a: not truth(a),
        "len": _len,
        "index": _index,
        "slice": _slice,
        "print": _print,
        "printf": lambda pattern, *args: gofmt.sprintf(pattern, list(args)),
        "println": _println,
        "html": lambda *a: html.escape(_print(*a)).replace("&#x27;", "&#39;"),
        "js": lambda *a: json.dumps(_print(*a))[1:-1].replace("'", "\\'"),
        "urlquery": lambda *a: urllib.parse.quote_plus(_print(*a)),
        **{name: _compare(name) for name in ("eq", "ne", "lt", "le", "gt", "ge")},
        # Prometheus's (template/template.go, 2.42)
        "query": query,
        "first": first,
        "label": lambda name, sample: sample.Labels.get(name, ""),
        "value": lambda sample: sample.Value,
        "strvalue": lambda sample: sample.Labels.get("__value__", ""),
        "args": lambda *a: {f"arg{i}": v for i, v in enumerate(a)},
        "reReplaceAll": reReplaceAll,
        "safeHtml": lambda text: text,
        "match": match,
        "title": title,
        "toUpper": str.upper,
        "toLower": str.lower,
        "graphLink": lambda expression: _link(expression, 0),
        "tableLink": lambda expression: _link(expression, 1),
        "sortByLabel": lambda name, result: sorted(result, key=lambda s: s.Labels.get(name, "")),
        "stripPort": stripPort,
        "stripDomain": stripDomain,
        "humanize": humanize,
        "humanize1024": humanize1024,
        "humanizeDuration": humanizeDuration,
        "humanizePercentage": humanizePercentage,
        "humanizeTimestamp": humanizeTimestamp,
        "toTime": toTime,
        "pathPrefix": lambda: path,
        "externalURL": lambda: external_url,
        "parseDuration": parseDuration,
    }


#: Every name a template may call (`and` / `or` are special forms in `execute`).
NAMES = frozenset(functions(lambda _: [], "")) | {"and", "or"}
#: Defined by Go or Prometheus, not by wanka: a template calling one fails to load, naming it.
UNSUPPORTED = frozenset({"call"})
