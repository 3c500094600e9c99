"""`rule_files`, `alerting.alertmanagers` and `global.evaluation_interval` /
`rule_query_offset` in wanka.yml, as Prometheus writes them; a bad rule file is a configuration
error naming the file and line, so a start or a reload changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.config import build
from service.config.spec import ConfigError
from tests.conftest import invoke_wanka

RULES = "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    for: 5m\n"
CONFIG = """\
global: {evaluation_interval: 30s, rule_query_offset: 5s, external_labels: {cluster: a}}
rule_files: [rules/*.yml]
alerting:
  alertmanagers:
    - static_configs: [{targets: ['am1:9093', 'am2:9093']}]
      path_prefix: /am
      timeout: 3s
"""


def test_rule_files_and_alertmanagers_are_read_as_prometheus_writes_them(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "a.yml").write_text(RULES)
    (tmp_path / "wanka.yml").write_text(CONFIG)
    rules = build.load(tmp_path / "wanka.yml", {}).rules
    assert [g.name for g in rules.groups] == ["g"]
    assert rules.groups[0].rules[0].for_ms == 300_000
    assert (rules.evaluation_interval_s, rules.query_offset_s) == (30.0, 5.0)
    assert rules.alertmanagers == ("http://am1:9093/am", "http://am2:9093/am")
    assert rules.alertmanager_timeout_s == 3.0
    flagged = build.load(tmp_path / "wanka.yml", {"rule_file": (tmp_path / "rules" / "a.yml",)})
    assert len(flagged.rules.groups) == 2  # --rule-file adds to the file's rule_files


def test_a_bad_rule_file_is_a_configuration_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "a.yml").write_text(
        RULES.replace("    for: 5m\n", "    query_offset: 1m\n")
    )
    (tmp_path / "wanka.yml").write_text(CONFIG)
    with pytest.raises(
        ConfigError, match=r"(?s)a\.yml: yaml: unmarshal errors:.*line 6: field query_offset"
    ):
        build.load(tmp_path / "wanka.yml", {})
    ran = invoke_wanka("check", "config", str(tmp_path / "wanka.yml"))
    assert ran.returncode == 2 and "query_offset" in ran.stderr


def test_an_alertmanager_needs_its_static_configs(tmp_path: Path) -> None:
    (tmp_path / "wanka.yml").write_text("alerting: {alertmanagers: [{scheme: http}]}\n")
    with pytest.raises(ConfigError, match="static_configs"):
        build.load(tmp_path / "wanka.yml", {})
