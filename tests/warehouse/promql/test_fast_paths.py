"""The fast paths give what the general ones give: instant selectors at one time or on steps a
lookback or more apart (a GROUP BY, not a sort of every series), and `*_over_time` over
windows of whole steps (by step buckets). Samples sit on the grid, off it, in gaps, with NaN
and a staleness marker, where the edge cases of both paths are."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.warehouse.promql import reference as ref
from tests.warehouse.promql.test_vs_prometheus import wanka_query, wanka_range
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.promql import buckets, translate

MINUTE = 60_000
T = (1_790_000_000_000 // 3_600_000) * 3_600_000  # a whole hour
STALE = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]


def _series() -> dict[ref.Labels, ref.Samples]:
    found: dict[ref.Labels, ref.Samples] = {}
    for gpu in range(3):
        labels = (("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("gpu", str(gpu)), ("Hostname", "h1"))
        samples: ref.Samples = []
        for i in range(180):  # three hours, every minute, on the grid for gpu 0
            ts = T + i * MINUTE + gpu * 7_000
            if gpu == 1 and 40 <= i < 70:  # a gap longer than the lookback
                continue
            value = float(i % 17) if not (gpu == 2 and i % 29 == 0) else float("nan")
            samples.append((ts, value))
        if gpu == 0:  # a series that ends, and starts again
            samples.insert(100, (T + 99 * MINUTE + 30_000, STALE))
        found[tuple(sorted(labels))] = samples
    # one sample every 10 minutes, on whole minutes: a step a lookback after it still sees it
    labels = (("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("gpu", "3"), ("Hostname", "h2"))
    found[tuple(sorted(labels))] = [(T + i * 10 * MINUTE, float(i)) for i in range(18)]
    return found


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Engine]:
    engine = Engine(str(warehouses.empty(tmp_path_factory.mktemp("fast") / "w.duckdb")))
    ref.load_wanka(engine, _series())
    yield engine
    engine.close()


EXPRESSIONS = (
    "DCGM_FI_DEV_GPU_TEMP",
    "sum(DCGM_FI_DEV_GPU_TEMP)",
    "max by (Hostname) (DCGM_FI_DEV_GPU_TEMP offset 3m)",
    "timestamp(DCGM_FI_DEV_GPU_TEMP)",
    *(
        f"{fn}(DCGM_FI_DEV_GPU_TEMP[{r}]{o})"
        for fn in sorted(buckets.SPECS)
        for r, o in (("10m", ""), ("30m", " offset 5m"), ("1h", ""))
    ),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    expression=st.sampled_from(EXPRESSIONS),
    step_min=st.sampled_from([5, 10, 15]),
    start_min=st.integers(-20, 150),
    shift_ms=st.sampled_from([0, 0, 7_000, 30_000]),
)
def test_fast_paths_answer_as_the_general_ones(
    eng: Engine, expression: str, step_min: int, start_min: int, shift_ms: int
) -> None:
    step = step_min * MINUTE
    start = T + start_min * MINUTE + shift_ms
    end = start + 24 * step
    fast = wanka_range(eng, expression, start, end, step)
    with (
        mock.patch.object(translate, "SPARSE_INSTANTS", False),
        mock.patch.object(buckets, "ENABLED", False),
    ):
        general = wanka_range(eng, expression, start, end, step)
    assert fast["status"] == "success", fast
    assert not ref.differences(fast, general)
    assert fast["data"]["result"] or start_min > 140  # the answers hold points


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    expression=st.sampled_from(EXPRESSIONS),
    # anywhere, or a lookback after one of gpu 3's samples: on the lookback's closed left end
    at_s=st.one_of(st.integers(-600, 190 * 60), st.integers(0, 17).map(lambda i: i * 600 + 300)),
)
def test_an_instant_answers_as_the_general_path(eng: Engine, expression: str, at_s: int) -> None:
    at = T + at_s * 1000
    fast = wanka_query(eng, expression, at)
    with mock.patch.object(translate, "SPARSE_INSTANTS", False):
        general = wanka_query(eng, expression, at)
    assert fast["status"] == "success", fast
    assert not ref.differences(fast, general)


def test_the_fast_paths_are_taken() -> None:
    """The comparison above compares two different plans."""
    from warehouse.promql.evaluate import instant, range_query

    sql = range_query("sum_over_time(x[1h])", T, T + 3_600_000, 600_000).sql
    assert "buckets" in sql
    assert "latest" in range_query("x", T, T + 3_600_000, 300_000).sql
    assert "latest" not in range_query("x", T, T + 3_600_000, 299_999).sql
    assert "lead(" not in instant("x", T).sql and "lead(" in range_query("x", T, T + 1, 1).sql
