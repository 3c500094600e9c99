"""The fast path's arrays sized by the series the window holds, and its steps cut into slices
where those need more cells than `MAX_CELLS` (`warehouse.promql.native`): it answers as the
SQL route, or leaves the query to it. On test_native's warehouse."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.warehouse.promql import reference as ref
from tests.warehouse.promql import test_native
from tests.warehouse.promql.test_native import (
    AGGREGATIONS,
    GROUPINGS,
    MINUTE,
    TEMP,
    T,
    both,
)
from warehouse.kernel.engine import Engine
from warehouse.promql import evaluate, native, native_reads

eng = test_native.eng  # test_native's warehouse, built again for this module

#: TEMP's series: 3 hosts × 4 GPUs, and one of 15 minutes.
TEMP_SERIES = 13


#: A query of the fast path's shapes on TEMP, as hypothesis draws it (`_shaped`'s arguments).
SHAPED = {
    "op": st.sampled_from(AGGREGATIONS),
    "grouping": st.sampled_from(GROUPINGS),
    "over_time": st.booleans(),
    "step_s": st.sampled_from([60, 120, 300]),
    "start_s": st.integers(-600, 300 * 60),
}
ON_ENG = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _shaped(
    op: str, grouping: str, over_time: bool, step_s: int, start_s: int, points: int
) -> evaluate.Compiled:
    inner = f"sum_over_time({TEMP}[{2 * step_s}s])" if over_time else TEMP
    start = T + start_s * 1000
    return evaluate.range_query(
        f"{op}{grouping} ({inner})", start, start + points * step_s * 1000, step_s * 1000
    )


def _same_with_cells(eng: Engine, compiled: evaluate.Compiled, cells: int) -> None:
    """With room for `cells` cells, the fast path answers as the SQL route, or leaves it."""
    with mock.patch.object(native, "MAX_CELLS", cells):
        general, fast = both(eng, compiled)
    if fast is not None:
        assert not ref.differences(fast, general), ref.differences(fast, general)


@ON_ENG
@given(**SHAPED, points=st.integers(0, 60))
def test_cells_sized_by_the_series_present_answer_as_the_sql_route(
    eng: Engine, op: str, grouping: str, over_time: bool, step_s: int, start_s: int, points: int
) -> None:
    """With room for one cell less than every series of the metric needs, the fast path sizes
    its arrays by the series with samples in the window."""
    compiled = _shaped(op, grouping, over_time, step_s, start_s, points)
    _same_with_cells(eng, compiled, TEMP_SERIES * (points + 1 + (2 if over_time else 0)) - 1)


def test_a_window_without_a_series_takes_the_fast_path(eng: Engine) -> None:
    compiled = evaluate.range_query(f"sum by (Hostname) ({TEMP})", T, T + 60 * MINUTE, 60_000)
    with mock.patch.object(native, "MAX_CELLS", TEMP_SERIES * 61 - 1):
        general, fast = both(eng, compiled)
    assert fast is not None and not ref.differences(fast, general)


def test_a_series_first_seen_after_the_count_leaves_the_query_to_sql(eng: Engine) -> None:
    """A series counted absent whose hot samples the read then finds came in between: the
    SQL route answers."""
    compiled = evaluate.range_query(f"sum({TEMP})", T + 50 * MINUTE, T + 110 * MINUTE, 60_000)
    assert compiled.native is not None
    [(late,)] = eng.con.execute(  # a series with hot samples in the window
        "SELECT min(series_id) FROM wanka.gpu_samples WHERE ts BETWEEN ? AND ? AND series_id IN "
        "(SELECT series_id FROM wanka.gpu_series WHERE metric = ?)",
        [datetime.fromtimestamp((T + m * MINUTE) / 1000, UTC) for m in (50, 110)] + [TEMP],
    ).fetchall()
    present = native_reads.present

    def missing_one(native_: Any, run_: Any, sids: np.ndarray, *args: Any) -> Any:
        return present(native_, run_, sids, *args) & (sids != late)

    def run(sql: str, params: dict[str, Any]) -> Any:
        return eng.con.sql(sql, params=params).to_arrow_table()

    with mock.patch.object(native, "MAX_CELLS", TEMP_SERIES * 61 - 1):  # hot and cold
        assert native.answer(compiled.native, run) is not None
        with mock.patch.object(native_reads, "present", missing_one):
            assert native.answer(compiled.native, run) is None


@ON_ENG
@given(**SHAPED, points=st.integers(1, 60), slices=st.integers(2, native.MAX_SLICES))
def test_steps_cut_into_slices_answer_as_the_sql_route(
    eng: Engine,
    op: str,
    grouping: str,
    over_time: bool,
    step_s: int,
    start_s: int,
    points: int,
    slices: int,
) -> None:
    """With room for every series on a part of the steps only, the steps are evaluated in
    slices, each reading its own blocks and hot samples."""
    compiled = _shaped(op, grouping, over_time, step_s, start_s, points)
    steps = -(-(points + 1) // slices) + (2 if over_time else 0)
    _same_with_cells(eng, compiled, TEMP_SERIES * steps)


def test_an_hour_in_three_slices(eng: Engine) -> None:
    compiled = evaluate.range_query(f"max by (Hostname) ({TEMP})", T, T + 120 * MINUTE, 60_000)
    kept = mock.Mock(wraps=native_reads.kept)
    with (
        mock.patch.object(native, "MAX_CELLS", TEMP_SERIES * 41),
        mock.patch.object(native_reads, "kept", kept),
    ):
        general, fast = both(eng, compiled)
    assert fast is not None and not ref.differences(fast, general)
    assert kept.call_count == 2 * 3  # both() asks twice
    assert general["data"]["result"]


def test_more_slices_than_allowed_leave_the_query_to_sql(eng: Engine) -> None:
    compiled = evaluate.range_query(f"sum({TEMP})", T, T + 120 * MINUTE, 60_000)
    with mock.patch.object(native, "MAX_CELLS", TEMP_SERIES * (121 // native.MAX_SLICES - 1)):
        assert both(eng, compiled)[1] is None


def test_too_many_series_in_blocks_and_hot_together_leave_the_query_to_sql(eng: Engine) -> None:
    """`present` refuses the blocks' series and the hot ones each past its bound, not their
    union: more slices than allowed are refused after it."""
    compiled = evaluate.range_query(f"sum({TEMP})", T, T + 120 * MINUTE, 60_000)
    everyone = mock.Mock(side_effect=lambda _n, _r, sids, *_: np.ones(len(sids), dtype=bool))
    with (
        mock.patch.object(native, "MAX_CELLS", TEMP_SERIES * 5),
        mock.patch.object(native_reads, "present", everyone),
    ):
        assert both(eng, compiled)[1] is None
    assert everyone.called
