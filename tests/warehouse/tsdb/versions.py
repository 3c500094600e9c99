"""A warehouse file as an older main wrote it: the schema steps up to a version alone, for the
tests of a migration step."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from warehouse.kernel import catalog
from warehouse.kernel.engine import Engine


@contextlib.contextmanager
def engine_of_version(patch: pytest.MonkeyPatch, path: Path, version: int) -> Iterator[Engine]:
    """A warehouse at `path` made by the schema steps up to `version` alone, with the reference
    tables such a file has (later steps add their own)."""
    old_steps = tuple(m for m in catalog.migrations() if m.version <= version)
    old_sql = "\n".join(m.sql for m in old_steps)
    old_refs = tuple(r for r in catalog.reference_tables() if f"CREATE TABLE {r.table} " in old_sql)
    patch.setattr(catalog, "migrations", lambda folder=None: old_steps)
    patch.setattr(catalog, "reference_tables", lambda folder=None: old_refs)
    with Engine(str(path)) as old:
        assert old.schema_version == version
        yield old
