"""The examples in the simulator's docstrings are true (pytest does not collect them itself)."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from warehouse.jobs import hostlist
from warehouse.simulate import inventory, job_labels, sacct, scontrol, tables, telemetry_plan


@pytest.mark.parametrize(
    "module", [hostlist, inventory, job_labels, sacct, scontrol, tables, telemetry_plan]
)
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
