"""`wanka test rules` passes and fails every promtool unit-test file of the corpus as
`promtool test rules` does, printing the same text for each failed expectation (the messages
of query and parse errors are the engines' own and differ)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import invoke_wanka
from tests.warehouse.rules.promtool import CORPUS, corpus_files, needs_promtool, promtool

pytestmark = needs_promtool

TEST_FILES = [p for p in corpus_files() if "rule_files:" in p.read_text()]
#: wanka's own files (tests/warehouse/rules/oracle/): every expectation fails on purpose, so
#: both tools print what they evaluated, and the whole output must be the same
ORACLE = sorted((Path(__file__).parent / "oracle").glob("*.test.yml"))


def expectation_failures(stderr: str) -> list[str]:
    """promtool's blocks for failed expectations (`alertname: ...` / `expr: ...` without
    `err:`), each a block of lines."""
    blocks = [b for b in stderr.split("\n\n") if b.strip()]
    return [
        b.strip("\n")
        for b in blocks
        if ("alertname:" in b or "    expr:" in b) and ", err:" not in b
    ]


def test_the_corpus_has_passing_and_failing_test_files() -> None:
    assert len(TEST_FILES) >= 15
    statuses = {promtool("test", "rules", p.name, cwd=p.parent).returncode for p in TEST_FILES}
    assert statuses == {0, 1}


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_test_rules_agrees_with_promtool(path: Path) -> None:
    oracle = promtool("test", "rules", path.name, cwd=path.parent)
    ran = invoke_wanka("test", "rules", path.name, cwd=path.parent)
    assert ran.returncode == oracle.returncode, ran.stderr
    assert expectation_failures(ran.stderr) == expectation_failures(oracle.stderr)
    assert ran.stdout.splitlines()[0] == oracle.stdout.splitlines()[0]  # "Unit Testing:  FILE"


@pytest.mark.parametrize("path", ORACLE, ids=lambda p: p.name)
def test_test_rules_prints_what_promtool_prints(path: Path) -> None:
    """Templates (every function, Go's fmt, errors at evaluation), `for`, `keep_firing_for`,
    resolution, recording rules read within and across groups, staleness, ALERTS."""
    oracle = promtool("test", "rules", path.name, cwd=path.parent)
    ran = invoke_wanka("test", "rules", path.name, cwd=path.parent)
    assert oracle.returncode == 1 and "exp:" in oracle.stderr
    assert (ran.returncode, ran.stdout, ran.stderr) == (1, oracle.stdout, oracle.stderr)
