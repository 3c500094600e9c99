"""Scrape targets from a Prometheus `file_sd` file (JSON or YAML), as Prometheus reads it.

    [{"targets": ["node001:9400", "node002:9400"], "labels": {"cluster": "a", "job": "dcgm"}}]

Each entry's targets share its labels. As in Prometheus, a target's `__address__` is the
listed host:port; `__scheme__` (default http), `__metrics_path__` (default /metrics) and
`__param_<name>` labels shape its URL; `job` is the entry's `job` label or the scrape's job
name, `instance` its own label or the address; labels starting `__` are then dropped. A file
that is not of this shape is refused whole with the file, entry and field named, so a bad edit
never replaces good targets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml

from warehouse.errors import UserError

_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass(frozen=True)
class Target:
    url: str
    labels: tuple[tuple[str, str], ...]  # sorted; what every series of the target gets
    #: Request headers of its scrape (Authorization, from a secret file): never printed.
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)


Headers = tuple[tuple[str, str], ...]


def load(
    path: Path, job: str = "dcgm", defaults: dict[str, str] | None = None, headers: Headers = ()
) -> list[Target]:
    """The targets of the file_sd file at `path` (see `parse`); UserError naming what is
    wrong."""
    try:
        text = path.read_text()
    except OSError as error:
        raise UserError(f"{path}: cannot read the scrape config: {error.strerror}") from None
    try:
        groups = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as error:
        raise UserError(f"{path}: not valid {_kind(path)}: {_first_line(error)}") from None
    return parse(groups or [], str(path), job, defaults, headers)


def parse(
    groups: Any,
    where: str,
    job: str = "dcgm",
    defaults: dict[str, str] | None = None,
    headers: Headers = (),
) -> list[Target]:
    """The targets of file_sd `groups` (the decoded file); `where` names it in errors. A
    group's labels go over `defaults` (a scrape config's `__scheme__`, `__metrics_path__` and
    `__param_*`), and each target is scraped with `headers`."""
    if not isinstance(groups, list):
        raise UserError(f"{where}: a file_sd file is a list of {{targets, labels}} entries")
    found: dict[Target, None] = {}
    for number, group in enumerate(groups, 1):
        spot = f"{where}: entry {number}"
        if not isinstance(group, dict):
            raise UserError(f"{spot}: expected an object with 'targets' and 'labels'")
        unknown = set(group) - {"targets", "labels"}
        if unknown:
            raise UserError(f"{spot}: unknown field {sorted(unknown)[0]!r}")
        addresses = group.get("targets") or []
        labels = group.get("labels") or {}
        if not isinstance(addresses, list) or not all(isinstance(a, str) and a for a in addresses):
            raise UserError(f"{spot}: 'targets' must be a list of host:port strings")
        if not isinstance(labels, dict):
            raise UserError(f"{spot}: 'labels' must be an object of label names to values")
        for name, value in labels.items():
            if not isinstance(name, str) or not _LABEL.fullmatch(name):
                raise UserError(f"{spot}: {name!r} is not a valid label name")
            if not isinstance(value, str):
                raise UserError(f"{spot}: label {name!r} must be a string, not {value!r}")
        for address in addresses:
            if "/" in address or " " in address:
                raise UserError(f"{spot}: {address!r} is not a host:port (no scheme or path)")
            found[target(address, {**(defaults or {}), **labels}, job, headers)] = None
    return list(found)


def target(address: str, labels: dict[str, str], job: str, headers: Headers = ()) -> Target:
    """The URL and the series labels of one target, by Prometheus's default relabelling."""
    scheme = labels.get("__scheme__", "http")
    path = labels.get("__metrics_path__", "/metrics")
    params = {k[len("__param_") :]: v for k, v in labels.items() if k.startswith("__param_")}
    url = f"{scheme}://{address}{path}" + (f"?{urlencode(params)}" if params else "")
    kept = {k: v for k, v in labels.items() if not k.startswith("__") and v != ""}
    kept.setdefault("job", job)
    kept.setdefault("instance", address)
    return Target(url, tuple(sorted(kept.items())), headers)


def _kind(path: Path) -> str:
    return "JSON" if path.suffix == ".json" else "YAML"


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
