"""What the sacct tests share: a dump written and ingested, its rows (the warehouse is
conftest's `eng`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import warehouse.ingest.sacct  # noqa: F401  (registers the format)
from warehouse.ingest import IngestResult, ReadOptions, ingest
from warehouse.kernel.engine import Engine


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def load(
    eng: Engine,
    folder: Path,
    text: str,
    *,
    name: str = "sacct.txt",
    force: bool = False,
    **opts: Any,
) -> IngestResult:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    [result] = ingest(eng, "sacct", [str(path)], ReadOptions(**opts), force=force)
    return result


def rows(eng: Engine, sql: str) -> list[tuple[Any, ...]]:
    return eng.con.sql(sql).fetchall()


def job(eng: Engine, job_id: str) -> dict[str, Any]:
    cur = eng.con.execute("SELECT * FROM jobs WHERE job_id = ?", [job_id])
    names = [d[0] for d in cur.description]
    [found] = cur.fetchall()
    return dict(zip(names, found, strict=True))
