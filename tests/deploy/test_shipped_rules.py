"""The shipped rule files (deploy/rules/): valid for `promtool check rules` and wanka alike,
their promtool-format tests passing under both tools, and the XID alerts holding exactly the
codes of their category in sql/reference/xid_codes.csv, read from the last-XID gauge (never
`increase` or `rate` over it)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, invoke_wanka
from tests.warehouse.rules.promtool import needs_promtool, promtool

RULES = REPO / "deploy" / "rules"
SHIPPED = sorted(RULES.glob("*.rules.yml"))
TESTS = sorted(RULES.glob("*.rules.test.yml"))


def test_every_shipped_rule_file_has_its_tests() -> None:
    assert [p.name.replace(".rules.yml", "") for p in SHIPPED] == ["dcgm", "health"]
    assert [p.name.replace(".rules.test.yml", "") for p in TESTS] == ["dcgm", "health"]


@needs_promtool
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_rules_are_valid_for_both_tools(path: Path) -> None:
    assert promtool("check", "rules", path).returncode == 0
    assert invoke_wanka("check", "rules", str(path)).returncode == 0


@needs_promtool
@pytest.mark.parametrize("path", TESTS, ids=lambda p: p.name)
def test_shipped_rule_tests_pass_under_both_tools(path: Path) -> None:
    oracle = promtool("test", "rules", path.name, cwd=path.parent)
    assert oracle.returncode == 0, oracle.stderr
    ran = invoke_wanka("test", "rules", path.name, cwd=path.parent)
    assert ran.returncode == 0, ran.stderr


def test_xid_alerts_hold_the_codes_of_their_category() -> None:
    by_category: dict[str, set[int]] = {}
    with (REPO / "sql" / "reference" / "xid_codes.csv").open() as f:
        for row in csv.DictReader(f):
            by_category.setdefault(row["category"], set()).add(int(row["xid"]))
    doc = yaml.safe_load((RULES / "dcgm.rules.yml").read_text())
    xid_rules = [r for g in doc["groups"] for r in g["rules"] if "XID_ERRORS" in r["expr"]]
    assert {r["labels"]["category"] for r in xid_rules} == {
        "fell_off_bus", "memory", "power_thermal", "nvlink", "driver_firmware", "video_engine",
        "virtualisation",
    }  # fmt: skip
    for rule in xid_rules:
        codes = {int(c) for c in re.findall(r"DCGM_FI_DEV_XID_ERRORS == ([0-9]+)", rule["expr"])}
        assert codes == by_category[rule["labels"]["category"]], rule["alert"]
        # a gauge of the last XID: never a counter's functions over it
        assert not re.search(r"(increase|rate|irate|delta)\(DCGM_FI_DEV_XID_ERRORS", rule["expr"])
