"""promtool's unit-test files read strictly (yaml.v2's UnmarshalStrict: an unknown key is an
error), and the texts promtool prints for a failed expectation.

>>> sample_text({"__name__": "up", "job": "a"}, 2.0), sample_text({}, 12345.0)
('{__name__="up", job="a"} 2E+00', '{} 1.2345E+04')
"""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from warehouse.errors import UserError
from warehouse.rules import durations
from warehouse.rules.gotemplate import gofmt


class UnitTestFileError(UserError):
    """A test file promtool would not read."""


@dataclass(frozen=True)
class InputSeries:
    series: str
    values: str


@dataclass(frozen=True)
class AlertTest:
    eval_time_ms: int
    alertname: str
    exp_alerts: tuple[tuple[dict[str, str], dict[str, str]], ...]  # (labels, annotations)


@dataclass(frozen=True)
class ExprTest:
    expr: str
    eval_time_ms: int
    exp_samples: tuple[tuple[str, float], ...]  # (labels text, value)


@dataclass(frozen=True)
class UnitTestGroup:
    interval_ms: int
    input_series: tuple[InputSeries, ...]
    alert_tests: tuple[AlertTest, ...]
    expr_tests: tuple[ExprTest, ...]
    external_labels: dict[str, str] = field(default_factory=dict)
    external_url: str = ""
    name: str = ""

    def max_eval_ms(self) -> int:
        times = [t.eval_time_ms for t in self.alert_tests] + [
            t.eval_time_ms for t in self.expr_tests
        ]
        return max(times, default=0)


@dataclass(frozen=True)
class UnitTestFile:
    path: Path
    rule_files: tuple[Path, ...]
    evaluation_interval_ms: int
    group_eval_order: tuple[str, ...]
    tests: tuple[UnitTestGroup, ...]
    warnings: tuple[str, ...] = ()


_KEYS = {
    "main.unitTestFile": {"rule_files", "evaluation_interval", "group_eval_order", "tests"},
    "main.testGroup": {
        "interval",
        "input_series",
        "alert_rule_test",
        "promql_expr_test",
        "external_labels",
        "external_url",
        "name",
    },
    "main.series": {"series", "values"},
    "main.alertTestCase": {"eval_time", "alertname", "exp_alerts"},
    "main.alert": {"exp_labels", "exp_annotations"},
    "main.promqlTestCase": {"expr", "eval_time", "exp_samples"},
    "main.sample": {"labels", "value"},
}


def _fields(value: Any, kind: str, problems: list[str]) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if not isinstance(value, dict):
        problems.append(f"cannot unmarshal {type(value).__name__} into {kind}")
        return {}
    for key in value:
        if key not in _KEYS[kind]:
            problems.append(f"field {key} not found in type {kind}")
    return value


def _duration(value: Any, problems: list[str]) -> int:
    if value is None:
        return 0
    try:
        return durations.parse_ms(str(value))
    except durations.BadDuration as error:
        problems.append(str(error))
        return 0


def _float(value: Any, problems: list[str]) -> float:
    if value is None or value == "":
        return 0.0
    try:
        return float(str(value).replace("_", "x")) if "_" in str(value) else float(value)
    except ValueError:
        problems.append(f"cannot unmarshal !!str `{value}` into float64")
        return 0.0


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): "" if v is None else _scalar(v) for k, v in (value or {}).items()}


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read(path: Path) -> UnitTestFile:
    """The test file at `path`, its rule files resolved beside it and globbed."""
    try:
        # every scalar as its text, as yaml.v2 gives a string field (`0x10` is not 16 there)
        raw = yaml.load(path.read_text(), Loader=yaml.BaseLoader)
    except OSError as error:
        raise UnitTestFileError(str(error)) from None
    except yaml.YAMLError as error:
        raise UnitTestFileError(f"yaml: {error}") from None
    problems: list[str] = []
    top = _fields(raw, "main.unitTestFile", problems)
    tests = tuple(_group(g, problems) for g in top.get("tests") or [])
    interval = _duration(top.get("evaluation_interval"), problems) or 60_000
    if problems:
        raise UnitTestFileError("yaml: unmarshal errors:\n  " + "\n  ".join(problems))
    files: list[Path] = []
    warnings: list[str] = []
    for pattern in top.get("rule_files") or []:
        full = str(pattern) if Path(str(pattern)).is_absolute() else str(path.parent / str(pattern))
        found = sorted(glob.glob(full))
        if not found:
            warnings.append(f"  WARNING: no file match pattern {full}")
        files.extend(Path(f) for f in found)
    order = tuple(str(n) for n in top.get("group_eval_order") or [])
    return UnitTestFile(path, tuple(files), interval, order, tests, tuple(warnings))


def _group(raw: Any, problems: list[str]) -> UnitTestGroup:
    fields = _fields(raw, "main.testGroup", problems)
    series = []
    for item in fields.get("input_series") or []:
        one = _fields(item, "main.series", problems)
        series.append(InputSeries(_scalar(one.get("series", "")), _scalar(one.get("values", ""))))
    alerts = []
    for item in fields.get("alert_rule_test") or []:
        one = _fields(item, "main.alertTestCase", problems)
        expected = []
        for exp in one.get("exp_alerts") or []:
            pair = _fields(exp, "main.alert", problems)
            expected.append(
                (_strings(pair.get("exp_labels")), _strings(pair.get("exp_annotations")))
            )
        when = _duration(one.get("eval_time"), problems)
        alerts.append(AlertTest(when, _scalar(one.get("alertname") or ""), tuple(expected)))
    exprs = []
    for item in fields.get("promql_expr_test") or []:
        one = _fields(item, "main.promqlTestCase", problems)
        samples = []
        for sample in one.get("exp_samples") or []:
            pair = _fields(sample, "main.sample", problems)
            samples.append((_scalar(pair.get("labels") or ""), _float(pair.get("value"), problems)))
        exprs.append(
            ExprTest(_scalar(one.get("expr", "")), _duration(one.get("eval_time"), problems),
                     tuple(samples))
        )  # fmt: skip
    return UnitTestGroup(
        _duration(fields.get("interval"), problems), tuple(series), tuple(alerts), tuple(exprs),
        _strings(fields.get("external_labels")), _scalar(fields.get("external_url") or ""),
        _scalar(fields.get("name") or ""),
    )  # fmt: skip


# -- what promtool prints -------------------------------------------------------------------


def labels_text(labels: dict[str, str]) -> str:
    """Prometheus's labels.String: `{a="1", b="2"}` in name order."""
    quoted = (f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(labels.items()))
    return "{" + ", ".join(quoted) + "}"


def sample_text(labels: dict[str, str], value: float) -> str:
    return f"{labels_text(labels)} {gofmt.float_exp(value, 'E')}"


def indent(lines: str, prefix: str) -> str:
    """promtool's indentLines: every line but the first gets `prefix`."""
    parts = lines.split("\n")
    return "\n".join(p if i == 0 else prefix + p for i, p in enumerate(parts))


Pair = tuple[dict[str, str], dict[str, str]]


def alerts_text(alerts: list[Pair]) -> str:
    if not alerts:
        return "[]"
    items = [
        f"{i}:" + indent(f"\nLabels:{labels_text(la)}\nAnnotations:{labels_text(an)}", "  ")
        for i, (la, an) in enumerate(alerts)
    ]
    return "[\n" + ",\n".join(items) + "\n]"
