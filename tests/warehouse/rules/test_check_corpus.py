"""`wanka check rules` accepts and refuses exactly what `promtool check rules` does: on every
file of the corpus of real public rule files (tests/warehouse/rules/corpus/README.md), and on
real files with one mutation of the kinds people make (a newer key, a bad duration, an unknown
template function, ...)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples, invoke_wanka
from tests.warehouse.rules.promtool import (
    CORPUS,
    check_verdicts,
    corpus_files,
    needs_promtool,
    promtool,
)
from warehouse.rules import rulefile

pytestmark = needs_promtool


def wanka_accepts(path: Path) -> bool:
    try:
        rulefile.load(path)
    except rulefile.RuleFileError:
        return False
    return True


def test_the_corpus_holds_valid_and_invalid_files() -> None:
    verdicts = check_verdicts()
    assert sum(verdicts.values()) >= 100 and list(verdicts.values()).count(False) >= 20
    # one run of promtool over all of them says what a run per file says
    for path in corpus_files()[::25]:
        assert verdicts[path] == (promtool("check", "rules", path).returncode == 0)


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_check_rules_agrees_with_promtool(path: Path) -> None:
    assert wanka_accepts(path) == check_verdicts()[path]


def test_the_command_prints_as_promtool_and_exits_2_on_a_bad_file() -> None:
    good = CORPUS / "hardware-observer" / "rules" / "dcgm.yaml"
    bad = CORPUS / "prometheus" / "rulefmt" / "record_and_for.bad.yaml"
    ran = invoke_wanka("check", "rules", str(good))
    assert ran.returncode == 0, ran.stderr
    found = promtool("check", "rules", good).stdout.splitlines()[1]
    assert ran.stdout.splitlines()[1] == found  # "  SUCCESS: N rules found"
    ran = invoke_wanka("check", "rules", str(good), str(bad))
    assert ran.returncode == 2
    assert "invalid field 'for' in recording rule" in ran.stderr


@pytest.mark.parametrize("name", ["rules_duplicates.yml", "prometheus-rules.lint.yml"])
def test_duplicate_rules_are_linted_as_promtool_lints_them(name: str) -> None:
    path = CORPUS / "prometheus" / "promtool" / name
    oracle = promtool("check", "rules", name, cwd=path.parent)
    ran = invoke_wanka("check", "rules", name, cwd=path.parent)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, oracle.stdout, oracle.stderr)


def _first_alert(doc: dict[str, Any]) -> dict[str, Any] | None:
    for group in doc.get("groups") or []:
        for rule in group.get("rules") or []:
            if "alert" in rule:
                return dict(rule)
    return None


MUTATIONS = {
    "query_offset": lambda d: d["groups"][0].__setitem__("query_offset", "1m"),
    "group_labels": lambda d: d["groups"][0].__setitem__("labels", {"team": "gpu"}),
    "unknown_rule_key": lambda d: d["groups"][0]["rules"][0].__setitem__("severity", "page"),
    "repeated_group": lambda d: d["groups"].append(copy.deepcopy(d["groups"][0])),
    "duration_without_unit": lambda d: d["groups"][0].__setitem__("interval", "30"),
    "fractional_duration": lambda d: d["groups"][0].__setitem__("interval", "1.5m"),
    "compound_duration": lambda d: d["groups"][0].__setitem__("interval", "1m30s"),
    "keep_firing_for": lambda d: d["groups"][0]["rules"][0].__setitem__("keep_firing_for", "5m"),
    "limit": lambda d: d["groups"][0].__setitem__("limit", 10),
    "unclosed_expr": lambda d: d["groups"][0]["rules"][0].__setitem__(
        "expr", d["groups"][0]["rules"][0]["expr"] + ")"
    ),
    "newer_function": lambda d: d["groups"][0]["rules"][0].__setitem__("expr", "limitk(1, up)"),
    "bad_record_name": lambda d: d["groups"][0]["rules"].append({"record": "a-b", "expr": "up"}),
    "record_with_annotations": lambda d: d["groups"][0]["rules"].append(
        {"record": "a:b", "expr": "up", "annotations": {"x": "y"}}
    ),
    "label_named___name__": lambda d: d["groups"][0]["rules"][0].__setitem__(
        "labels", {"__name__": "x"}
    ),
    "undefined_template_function": lambda d: d["groups"][0]["rules"].append(
        {"alert": "A", "expr": "up", "annotations": {"s": "{{ nosuch $value }}"}}
    ),
    "undefined_template_variable": lambda d: d["groups"][0]["rules"].append(
        {"alert": "A", "expr": "up", "labels": {"s": "{{ $nosuch }}"}}
    ),
    "unclosed_template": lambda d: d["groups"][0]["rules"].append(
        {"alert": "A", "expr": "up", "annotations": {"s": "{{ $value "}}
    ),
    "good_template": lambda d: d["groups"][0]["rules"].append(
        {
            "alert": "A",
            "expr": "up",
            "annotations": {
                "s": '{{ range $k, $v := $labels }}{{ $k }}={{ $v | printf "%q" }} {{ end }}'
                "{{ if gt $value 1.0 }}{{ $value | humanizePercentage }}{{ else }}-{{ end }}"
            },
        }
    ),
    "template_in_recording_rule_label": lambda d: d["groups"][0]["rules"].append(
        {"record": "a:b", "expr": "up", "labels": {"s": "{{ nosuch }}"}}
    ),
    "empty_group_name": lambda d: d["groups"][0].__setitem__("name", ""),
    "no_rules": lambda d: d["groups"][0].__setitem__("rules", []),
}


def _first_group_has_rules(path: Path) -> bool:
    """Whether the file's first group holds rules: the mutations edit them (a group of
    awesome-prometheus-alerts may have none)."""
    groups = (yaml.safe_load(path.read_text()) or {}).get("groups") or []
    return bool(groups and groups[0].get("rules"))


VALID = [
    p
    for p in corpus_files()
    if ("awesome" in str(p) or p.parent.name == "rules") and _first_group_has_rules(p)
]


@settings(max_examples=examples(0.3))
@given(st.sampled_from(VALID), st.sampled_from(sorted(MUTATIONS)))
def test_check_rules_agrees_with_promtool_on_mutated_files(path: Path, mutation: str) -> None:
    doc = yaml.safe_load(path.read_text())
    MUTATIONS[mutation](doc)
    out = (
        Path("/dev/shm" if Path("/dev/shm").is_dir() else "/tmp") / f"wanka-mutated-{mutation}.yml"
    )
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        assert wanka_accepts(out) == (promtool("check", "rules", out).returncode == 0), mutation
    finally:
        out.unlink()
