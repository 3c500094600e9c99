"""A YAML file read against a declared shape, each error naming the file, line and key.

PyYAML's `compose` keeps where every node stood; the shape is declared as parsers (`Section`,
`ListOf`, `Labels`, and the leaves: `text`, `integer`, `number`, `boolean`, `duration`, `size`,
`address`, `choice`), each a callable from a node and its `Spot` to a Python value. As in
Prometheus (Go's strict YAML), an unknown key, a key given twice, a wrong type or a bad value is
an error; nothing is guessed.

>>> shape = Section({"every": duration, "sizes": ListOf(integer(min=1))})
>>> read_text("every: 1m30s\\nsizes: [1, 2]\\n", "a.yml", shape)
{'every': 90.0, 'sizes': [1, 2]}
>>> read_text("every: soon\\n", "a.yml", shape)
Traceback (most recent call last):
...
service.config.spec.ConfigError: a.yml:1: every: 'soon' is not a duration like 15s, 1m30s or 500ms
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from warehouse.errors import UserError

#: What a leaf or a section turns a node into.
Parser = Callable[[Node, "Spot"], Any]

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w|y)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800, "y": 31_536_000}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SIZE_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


class ConfigError(UserError):
    """A configuration that cannot be used: `file:line: key: why`."""


@dataclass(frozen=True)
class Spot:
    """Where a node stands: the file, its line (1-based) and its key path (`a.b[2].c`)."""

    file: str
    line: int
    key: str

    def at(self, node: Node, key: str) -> Spot:
        return Spot(self.file, node.start_mark.line + 1, key)

    def fail(self, why: str) -> ConfigError:
        where = f"{self.file}:{self.line}"
        return ConfigError(f"{where}: {self.key}: {why}" if self.key else f"{where}: {why}")


def read(path: Path, shape: Parser) -> Any:
    """The file at `path` read against `shape`; ConfigError naming what is wrong."""
    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the configuration: {error.strerror}") from None
    return read_text(text, str(path), shape)


def read_text(text: str, file: str, shape: Parser) -> Any:
    """`text` (the content of `file`) read against `shape`."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"{file}{line}: not valid YAML: {problem}") from None
    if node is None:  # an empty file: every default
        node = MappingNode("tag:yaml.org,2002:map", [])
    return shape(node, Spot(file, node.start_mark.line + 1 if node.start_mark else 1, ""))


def _scalar(node: Node, spot: Spot) -> Any:
    if not isinstance(node, ScalarNode):
        raise spot.fail(f"expected a single value, not a {_kind(node)}")
    return yaml.SafeLoader("").construct_object(node)


def _kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "mapping"
    return "list" if isinstance(node, SequenceNode) else "value"


# -- leaves ---------------------------------------------------------------------------------


def text(node: Node, spot: Spot) -> str:
    value = _scalar(node, spot)
    if not isinstance(value, str) or value == "":
        raise spot.fail(f"expected text, not {value!r}")
    return value


def boolean(node: Node, spot: Spot) -> bool:
    value = _scalar(node, spot)
    if not isinstance(value, bool):
        raise spot.fail(f"expected true or false, not {value!r}")
    return value


def integer(*, min: int | None = None, max: int | None = None) -> Parser:
    def parse(node: Node, spot: Spot) -> int:
        value = _scalar(node, spot)
        if isinstance(value, bool) or not isinstance(value, int):
            raise spot.fail(f"expected a whole number, not {value!r}")
        if (min is not None and value < min) or (max is not None and value > max):
            raise spot.fail(f"{value} is out of range [{min}, {max}]")
        return value

    return parse


def number(node: Node, spot: Spot) -> float:
    value = _scalar(node, spot)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise spot.fail(f"expected a number ≥ 0, not {value!r}")
    return float(value)


def duration(node: Node, spot: Spot) -> float:
    """A Prometheus duration (`15s`, `1m30s`, `500ms`, `2h`, `14d`), in seconds; 0 is `0s`."""
    value = _scalar(node, spot)
    given = str(value).strip()
    parts = _DURATION.findall(given)
    if given == "0":
        return 0.0
    if isinstance(value, bool) or not parts or "".join(n + u for n, u in parts) != given:
        raise spot.fail(f"{value!r} is not a duration like 15s, 1m30s or 500ms")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def size(node: Node, spot: Spot) -> int:
    """A size in bytes: `512MB`, `8GB`, `1GiB` or a plain number of bytes."""
    value = _scalar(node, spot)
    match = _SIZE.fullmatch(str(value).strip())
    if isinstance(value, bool) or match is None:
        raise spot.fail(f"{value!r} is not a size like 512MB, 8GB or 1GiB")
    return int(float(match.group(1)) * _SIZE_UNITS[(match.group(2) or "").lower()])


def address(node: Node, spot: Spot) -> tuple[str, int]:
    """`host:port` (an IPv6 host in brackets), as Prometheus writes listen addresses."""
    given = text(node, spot)
    host, _, port = given.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise spot.fail(f"{given!r} is not a host:port address")
    return host, int(port)


def path(node: Node, spot: Spot) -> Path:
    """A file path; a relative one is taken from the configuration file's folder, as
    Prometheus does."""
    given = Path(text(node, spot))
    return given if given.is_absolute() else Path(spot.file).parent / given


def readable_file(node: Node, spot: Spot) -> Path:
    """A path to a file that exists and can be read now."""
    found = path(node, spot)
    try:
        with found.open("rb"):
            pass
    except OSError as error:
        raise spot.fail(f"cannot read {found}: {error.strerror}") from None
    return found


@dataclass(frozen=True)
class Secret:
    """A password or token read from a file or the environment: never printed."""

    value: str = field(repr=False)

    def __str__(self) -> str:
        return "<secret>"


def secret_file(node: Node, spot: Spot) -> Secret:
    """The secret held by a file (its content, trailing newlines left out)."""
    found = path(node, spot)
    try:
        value = found.read_text().rstrip("\r\n")
    except OSError as error:
        raise spot.fail(f"cannot read the secret file {found}: {error.strerror}") from None
    if not value:
        raise spot.fail(f"the secret file {found} is empty")
    return Secret(value)


def secret_env(node: Node, spot: Spot) -> Secret:
    """The secret held by an environment variable."""
    name = text(node, spot)
    value = os.environ.get(name)
    if not value:
        raise spot.fail(f"the environment variable {name} is not set")
    return Secret(value)


def choice(*allowed: str) -> Parser:
    def parse(node: Node, spot: Spot) -> str:
        value = _scalar(node, spot)
        if value not in allowed:
            raise spot.fail(f"{value!r} is not one of {', '.join(allowed)}")
        return str(value)

    return parse


def optional(parser: Parser) -> Parser:
    """`parser`, or None where the value is null (`~`, `null` or nothing)."""

    def parse(node: Node, spot: Spot) -> Any:
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return None
        return parser(node, spot)

    return parse


# -- containers -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    """A mapping of known keys, each read by its parser; missing keys are left out (the
    caller's defaults apply). `refuse` names keys that are errors with a reason of their own
    (inline secrets)."""

    keys: Mapping[str, Parser]
    refuse: Mapping[str, str] | None = None
    required: tuple[str, ...] = ()
    #: Checks of the keys together: each (keys, why), failing when all those keys are given.
    exclusive: tuple[tuple[tuple[str, ...], str], ...] = ()
    #: A check of the keys read: what is wrong with them, or None.
    check: Callable[[dict[str, Any]], str | None] | None = None

    def __call__(self, node: Node, spot: Spot) -> dict[str, Any]:
        found = self._read(node, spot)
        for name in self.required:
            if name not in found:
                raise spot.fail(f"{name} is missing")
        for together, why in self.exclusive:
            if all(k in found for k in together):
                raise spot.fail(why)
        wrong = self.check(found) if self.check is not None else None
        if wrong is not None:
            raise spot.fail(wrong)
        return found

    def _read(self, node: Node, spot: Spot) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in _pairs(node, spot):
            name = str(key.value)
            here = spot.at(key, f"{spot.key}.{name}" if spot.key else name)
            if self.refuse and name in self.refuse:
                raise here.fail(self.refuse[name])
            if name not in self.keys:
                known = ", ".join(sorted(self.keys))
                raise here.fail(f"unknown key (known here: {known})")
            if name in found:
                raise here.fail("given twice")
            found[name] = self.keys[name](value, here)
        return found


@dataclass(frozen=True)
class ListOf:
    """A list of items read by `item`; with `unique`, no two items may have the same value
    of that key (a scrape config's `job_name`)."""

    item: Parser
    unique: str | None = None

    def __call__(self, node: Node, spot: Spot) -> list[Any]:
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null":
            return []
        if not isinstance(node, SequenceNode):
            raise spot.fail(f"expected a list, not a {_kind(node)}")
        items, seen = [], set()
        for i, child in enumerate(node.value):
            here = spot.at(child, f"{spot.key}[{i}]")
            item = self.item(child, here)
            if self.unique is not None:
                if item[self.unique] in seen:
                    raise here.fail(f"{self.unique} {item[self.unique]!r} is given twice")
                seen.add(item[self.unique])
            items.append(item)
        return items


@dataclass(frozen=True)
class MapOf:
    """A mapping of any names (matching `key`) to values read by `value`."""

    value: Parser
    key: str = r"[a-zA-Z_][a-zA-Z0-9_.]*"

    def __call__(self, node: Node, spot: Spot) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in _pairs(node, spot):
            name = str(key.value)
            here = spot.at(key, f"{spot.key}.{name}")
            if not re.fullmatch(self.key, name):
                raise here.fail("not a valid name here")
            if name in found:
                raise here.fail("given twice")
            found[name] = self.value(value, here)
        return found


def labels(node: Node, spot: Spot) -> dict[str, str]:
    """A map of label names to values (`external_labels`, a target group's `labels`)."""
    found: dict[str, str] = {}
    for key, value in _pairs(node, spot):
        name = str(key.value)
        here = spot.at(key, f"{spot.key}.{name}")
        if not _LABEL.fullmatch(name):
            raise here.fail("not a valid label name")
        if name in found:
            raise here.fail("given twice")
        got = _scalar(value, here)
        if not isinstance(got, str | int | float) or isinstance(got, bool):
            raise here.fail(f"a label value is text, not {got!r}")
        found[name] = str(got)
    return found


def _pairs(node: Node, spot: Spot) -> list[tuple[ScalarNode, Node]]:
    if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null":
        return []
    if not isinstance(node, MappingNode):
        raise spot.fail(f"expected a mapping of keys, not a {_kind(node)}")
    pairs = []
    for key, value in node.value:
        if not isinstance(key, ScalarNode):
            raise spot.at(key, spot.key).fail("a key must be a plain name")
        pairs.append((key, value))
    return pairs
