"""One builder of reader options for the CLI's `wanka ingest` and HTTP `POST /v1/ingest`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from service.commands.common import read_options
from warehouse.errors import UserError
from warehouse.ingest import ReadOptions


def cli(field: str) -> str:
    return "--" + field.replace("_", "-")


def test_text_becomes_typed_options() -> None:
    got = read_options(
        str,
        at="2026-11-01T00:00:00",
        columns=" JobID, State ,Start",
        trace_start="2023-01-01T00:00:00+00:00",
        table="jobs",
        timezone="Europe/Berlin",
    )
    assert got == ReadOptions(
        at=datetime(2026, 11, 1, tzinfo=UTC),
        columns=("JobID", "State", "Start"),
        trace_start=datetime(2023, 1, 1, tzinfo=UTC),
        table="jobs",
        timezone="Europe/Berlin",
    )
    assert read_options(str) == ReadOptions()


@pytest.mark.parametrize(
    ("spell", "field", "named"),
    [
        (cli, "at", "--at"),
        (cli, "trace_start", "--trace-start"),
        (str, "trace_start", "trace_start"),
    ],
)
def test_a_bad_time_names_the_option_as_the_face_spells_it(
    spell: Callable[[str], str], field: str, named: str
) -> None:
    with pytest.raises(UserError) as caught:
        read_options(spell, **{field: "yesterday"})
    assert str(caught.value) == (
        f"{named} 'yesterday' is not an ISO 8601 time like 2026-11-01T00:00:00Z"
    )
