"""Prometheus 2.42 rule files read as Prometheus reads them (`model/rulefmt`): the keys it
knows and nothing else, every rule checked, every error collected with where it stands.

The errors are worded as `promtool check rules` prints them (`5:11: group "g", rule 1,
"name": could not parse expression: ...`), so a person who knows one knows the other.

>>> groups = parse_text('''
... groups:
... - name: gpu
...   interval: 30s
...   rules:
...   - alert: Hot
...     expr: DCGM_FI_DEV_GPU_TEMP > 90
...     for: 2m
...     labels: {severity: page}
... ''', "a.yml")
>>> groups[0].name, groups[0].interval_ms, groups[0].rules[0].for_ms
('gpu', 30000, 120000)
>>> parse_text("groups:\\n- name: g\\n  query_offset: 1m\\n", "b.yml")
Traceback (most recent call last):
...
warehouse.rules.rulefile.RuleFileError: b.yml: yaml: unmarshal errors:
  line 3: field query_offset not found in type rulefmt.RuleGroup
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from warehouse.errors import UserError
from warehouse.rules import durations, expressions, gotemplate

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_GROUPS_KEYS = {"groups"}
_GROUP_KEYS = {"name", "interval", "limit", "rules"}
_RULE_KEYS = {"record", "alert", "expr", "for", "keep_firing_for", "labels", "annotations"}


class RuleFileError(UserError):
    """A rule file Prometheus would not load; `errors` holds each of its problems."""

    def __init__(self, file: str, errors: list[str]) -> None:
        super().__init__("\n".join(f"{file}: {e}" for e in errors))
        self.file, self.errors = file, errors


@dataclass(frozen=True)
class Rule:
    """One recording (`kind` record) or alerting (`kind` alert) rule."""

    kind: str
    name: str
    expr: str
    for_ms: int = 0
    keep_firing_for_ms: int = 0
    labels: tuple[tuple[str, str], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Group:
    """A rule group: its rules run in order at one timestamp every `interval_ms` (None: the
    configured default)."""

    file: str
    name: str
    interval_ms: int | None
    limit: int
    rules: tuple[Rule, ...]

    def interval(self, default_ms: int) -> int:
        return self.interval_ms if self.interval_ms else default_ms


def load(path: str | Path) -> list[Group]:
    """The groups of the rule file at `path`; RuleFileError when Prometheus would refuse it."""
    file = str(path)
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise RuleFileError(file, [f"error reading file: {error.strerror or error}"]) from None
    return parse_text(text, file)


def parse_text(text: str, file: str) -> list[Group]:
    """The groups of a rule file's text (`file` names it in errors)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise RuleFileError(file, [f"yaml: {where}{problem}"]) from None
    if root is None:
        return []
    structural: list[str] = []
    raw = _structure(root, structural)
    if structural:
        raise RuleFileError(file, ["yaml: unmarshal errors:\n  " + "\n  ".join(structural)])
    errors: list[str] = []
    groups: list[Group] = []
    seen: set[str] = set()
    for node, fields, rule_fields in raw:
        name = _text(fields.get("name"), "string", errors)
        interval = _duration(fields.get("interval"), errors)
        limit = _int(fields.get("limit"), errors)
        where = f"{node.start_mark.line + 1}:{node.start_mark.column + 1}"
        if not name:
            errors.append(f"{where}: Groupname must not be empty")
        if name in seen:
            errors.append(f'{where}: groupname: "{name}" is repeated in the same file')
        seen.add(name)
        rules = [_rule(name, n, fields, errors) for n, fields in enumerate(rule_fields, start=1)]
        groups.append(Group(file, name, interval or None, limit, tuple(r for r in rules if r)))
    if errors:
        raise RuleFileError(file, errors)
    return groups


_Raw = list[tuple[Node, dict[str, Node], list[dict[str, Node]]]]


def _structure(root: Node, errors: list[str]) -> _Raw:
    """Each group's node, its fields and its rules' fields, unknown keys and wrong kinds of
    node noted in `errors` (yaml.v3's strict decoding)."""
    found: _Raw = []
    groups_node = _mapping(root, "rulefmt.RuleGroups", _GROUPS_KEYS, errors).get("groups")
    if groups_node is None or _null(groups_node):
        return found
    for item in _sequence(groups_node, "[]rulefmt.RuleGroup", errors):
        fields = _mapping(item, "rulefmt.RuleGroup", _GROUP_KEYS, errors)
        rules_node = fields.get("rules")
        rules = []
        if rules_node is not None and not _null(rules_node):
            for rule in _sequence(rules_node, "[]rulefmt.RuleNode", errors):
                rules.append(_mapping(rule, "rulefmt.RuleNode", _RULE_KEYS, errors))
        found.append((item, fields, rules))
    return found


def _rule(group: str, number: int, fields: dict[str, Node], errors: list[str]) -> Rule | None:
    """The rule of `fields`, or None with its problems added to `errors` as promtool words
    them (`LINE:COL: group "g", rule N, "name": why`)."""
    record = _text(fields.get("record"), "string", errors)
    alert = _text(fields.get("alert"), "string", errors)
    expr = _text(fields.get("expr"), "string", errors)
    for_ms = _duration(fields.get("for"), errors)
    keep_ms = _duration(fields.get("keep_firing_for"), errors)
    labels = _string_map(fields.get("labels"), errors)
    annotations = _string_map(fields.get("annotations"), errors)
    own: list[tuple[Node | None, str]] = []
    if record and alert:
        own.append((fields.get("record"), "only one of 'record' and 'alert' must be set"))
    if not record and not alert:
        own.append((fields.get("record"), "one of 'record' or 'alert' must be set"))
    own += _expression_problems(fields.get("expr"), expr)
    if record:
        own += _recording_problems(fields, record, annotations, for_ms, keep_ms)
    own += [(None, f"invalid label name: {k}") for k, _ in labels if not _label_name(k)]
    own += [
        (None, f"invalid annotation name: {k}")
        for k, _ in annotations
        if not _LABEL_NAME.fullmatch(k)
    ]
    if alert:
        own += _template_problems(alert, labels, annotations)
    name = alert or record
    for node, why in own:
        where = _where(node, missing="0:0: " if "'expr'" in why else "")
        errors.append(f'{where}group "{group}", rule {number}, "{name}": {why}')
    if own:
        return None
    return Rule(
        "alert" if alert else "record", name, expr, for_ms, keep_ms,
        tuple(sorted(labels)), tuple(sorted(annotations)),
    )  # fmt: skip


def _where(node: Node | None, missing: str) -> str:
    """`LINE:COL: ` of a node, as yaml.v3 counts; `missing` for a key not given."""
    return f"{node.start_mark.line + 1}:{node.start_mark.column + 1}: " if node else missing


def _label_name(name: str) -> bool:
    return bool(_LABEL_NAME.fullmatch(name)) and name != "__name__"


def _expression_problems(node: Node | None, expr: str) -> list[tuple[Node | None, str]]:
    if not expr:
        return [(None, "field 'expr' must be set in rule")]
    try:
        expressions.check(expr)
    except expressions.BadExpression as error:
        return [(node, f"could not parse expression: {error}")]
    return []


def _recording_problems(
    fields: dict[str, Node], record: str, annotations: list[Any], for_ms: int, keep_ms: int
) -> list[tuple[Node | None, str]]:
    found: list[tuple[Node | None, str]] = []
    if annotations:
        found.append((fields.get("annotations"), "invalid field 'annotations' in recording rule"))
    if for_ms:
        found.append((fields.get("for"), "invalid field 'for' in recording rule"))
    if keep_ms:
        why = "invalid field 'keep_firing_for' in recording rule"
        found.append((fields.get("keep_firing_for"), why))
    if not _METRIC_NAME.fullmatch(record):
        found.append((fields.get("record"), f"invalid recording rule name: {record}"))
    return found


def _template_problems(
    alert: str, labels: list[tuple[str, str]], annotations: list[tuple[str, str]]
) -> list[tuple[Node | None, str]]:
    """What Prometheus's testTemplateParsing finds: each template parsed, none run."""
    found: list[tuple[Node | None, str]] = []
    for what, pairs in (("label", labels), ("annotation", annotations)):
        for key, value in pairs:
            try:
                gotemplate.check(value, alert)
            except gotemplate.TemplateError as error:
                found.append((None, f'{what} "{key}": {error}'))
    return found


def _null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag.endswith(":null")


def _mapping(node: Node, go_type: str, keys: set[str], errors: list[str]) -> dict[str, Node]:
    line = node.start_mark.line + 1
    if _null(node):
        return {}
    if not isinstance(node, MappingNode):
        errors.append(f"line {line}: cannot unmarshal {_tag(node)} into {go_type}")
        return {}
    found: dict[str, Node] = {}
    for key_node, value in node.value:
        key = str(key_node.value)
        if key in found:
            errors.append(
                f'line {key_node.start_mark.line + 1}: mapping key "{key}" already defined at '
                f"line {found[key].start_mark.line}"
            )
        elif key not in keys:
            errors.append(
                f"line {key_node.start_mark.line + 1}: field {key} not found in type {go_type}"
            )
        found[key] = value
    return found


def _sequence(node: Node, go_type: str, errors: list[str]) -> list[Node]:
    if not isinstance(node, SequenceNode):
        errors.append(
            f"line {node.start_mark.line + 1}: cannot unmarshal {_tag(node)} into {go_type}"
        )
        return []
    return list(node.value)


def _tag(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "!!map"
    if isinstance(node, SequenceNode):
        return "!!seq"
    return f"!!{node.tag.rsplit(':', 1)[-1]} `{node.value}`"


def _unmarshal(node: Node, go_type: str) -> str:
    line = node.start_mark.line + 1
    return f"yaml: unmarshal errors:\n  line {line}: cannot unmarshal {_tag(node)} into {go_type}"


def _text(node: Node | None, go_type: str, errors: list[str]) -> str:
    if node is None or _null(node):
        return ""
    if not isinstance(node, ScalarNode):
        errors.append(_unmarshal(node, go_type))
        return ""
    return str(node.value)


def _duration(node: Node | None, errors: list[str]) -> int:
    text = _text(node, "model.Duration", errors)
    if not text:
        return 0
    try:
        return durations.parse_ms(text)
    except durations.BadDuration as error:
        errors.append(str(error))
        return 0


def _int(node: Node | None, errors: list[str]) -> int:
    text = _text(node, "int", errors)
    if not text:
        return 0
    try:
        return (
            int(text, 0)
            if not text.lstrip("+-").startswith("0") or text in ("0", "-0")
            else int(text, 8)
        )
    except ValueError:
        errors.append(_unmarshal(node, "int") if node else f"cannot unmarshal {text} into int")
        return 0


def _string_map(node: Node | None, errors: list[str]) -> list[tuple[str, str]]:
    if node is None or _null(node):
        return []
    if not isinstance(node, MappingNode):
        errors.append(_unmarshal(node, "map[string]string"))
        return []
    pairs: dict[str, str] = {}
    for key_node, value in node.value:
        if not isinstance(value, ScalarNode):
            errors.append(_unmarshal(value, "string"))
            continue
        pairs[str(key_node.value)] = "" if _null(value) else str(value.value)
    return list(pairs.items())


def rules_count(groups: list[Group]) -> int:
    return sum(len(g.rules) for g in groups)


def describe(value: Any) -> str:
    return str(value)


def duplicate_rules(groups: list[Group]) -> str | None:
    """promtool's duplicate-rules lint: rules of a file with the same name and labels, worded
    as it prints them (a warning: the file is still valid); None when there are none.

    >>> rule = Rule("record", "job:up:sum", "sum(up)", labels=(("team", "gpu"),))
    >>> twice = [Group("f", "a", None, 0, (rule,)), Group("f", "b", None, 0, (rule,))]
    >>> duplicate_rules(twice).splitlines()[:3]
    ['lint error 1 duplicate rule(s) found.', 'Metric: job:up:sum', 'Label(s):']
    """
    keys = sorted((rule.name, rule.labels) for group in groups for rule in group.rules)
    found: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    for before, key in itertools.pairwise(keys):
        if key == before and (not found or found[-1] != key):
            found.append(key)
    if not found:
        return None
    text = f"lint error {len(found)} duplicate rule(s) found.\n"
    for name, labels in found:
        text += f"Metric: {name}\nLabel(s):\n" + "".join(f"\t{k}: {v}\n" for k, v in labels)
    return text + "Might cause inconsistency while recording expressions"
