"""A fresh warehouse file per test, for the ingest tests that do not make their own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from warehouse.kernel.engine import Engine


@pytest.fixture
def eng(fresh_db: Path) -> Iterator[Engine]:
    with Engine(str(fresh_db)) as engine:
        yield engine
