"""SimConfig: what a simulation may be asked for, and the errors for what it may not."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from warehouse.errors import UserError
from warehouse.simulate import InvalidConfig, SimConfig


@pytest.mark.parametrize(
    ("kwargs", "complaint"),
    [
        ({"gpus": 4}, "gpus must be at least 8"),
        ({"gpus": 8.0}, "gpus must be an integer"),
        ({"gpus": True}, "gpus must be an integer"),
        ({"hours": 0}, "hours must be a finite positive number"),
        ({"hours": float("inf")}, "hours must be a finite positive number"),
        ({"interval_s": -1}, "interval_s must be a finite positive number"),
        ({"interval_s": 0}, "interval_s must be a finite positive number"),
        ({"interval_s": 1e-9}, "at least 1 µs"),
        ({"warmup_hours": -1}, "warmup_hours must be a finite non-negative number"),
        ({"seed": -3}, "seed must be at least 0"),
        ({"start": "2026-11-01"}, "start must be a datetime"),
    ],
)
def test_out_of_domain_parameters_are_value_errors_naming_the_parameter(
    kwargs: dict[str, Any],  # Any: values of the wrong type on purpose
    complaint: str,
) -> None:
    with pytest.raises(ValueError, match=complaint) as caught:
        SimConfig(**kwargs)
    assert isinstance(caught.value, InvalidConfig)
    assert isinstance(caught.value, UserError)  # exit status 2 at the CLI


def test_gpus_round_up_to_whole_hosts() -> None:
    assert SimConfig(gpus=10_000).hosts == 1_250
    assert SimConfig(gpus=9).hosts == 2


def test_scrapes_cover_the_window() -> None:
    assert SimConfig(hours=1, interval_s=60).steps == 60
    assert SimConfig(hours=1, interval_s=7).steps == 515  # last scrape at 3598 s
    assert SimConfig(hours=0.001, interval_s=60).steps == 1


def test_a_naive_start_is_utc() -> None:
    cfg = SimConfig(start=datetime(2026, 11, 1, 6))
    assert cfg.start == datetime(2026, 11, 1, 6, tzinfo=UTC)
    assert cfg.to_json()["start"] == "2026-11-01T06:00:00+00:00"
