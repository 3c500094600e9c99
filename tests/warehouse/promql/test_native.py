"""The fast path over decoded arrays (`warehouse.promql.native`) answers as the SQL route.

One warehouse holds a metric in compressed blocks, in an extra block of late samples and hot
(late samples of a compacted window, and the open window), with NaN, ±Inf, -0.0, gaps, series
that start and stop, samples on and off the grid and duplicate timestamps; a second metric has
staleness markers, which the fast path leaves to the SQL route. Values are small integers and
halves, so that no order of additions changes a sum.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.warehouse.promql import reference as ref
from tests.warehouse.promql.test_vs_prometheus import ours
from tests.warehouses import Warehouses
from warehouse.kernel import blocks
from warehouse.kernel.engine import Engine
from warehouse.promql import evaluate, native, render
from warehouse.tsdb.compact import FLUSH, compact

MINUTE = 60_000
T = (1_790_000_000_000 // 7_200_000) * 7_200_000  # a whole 2 h window
STALE = struct.unpack("<d", struct.pack("<Q", 0x7FF0000000000002))[0]
TEMP, POWER = "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"
CLOCK = "DCGM_FI_DEV_SM_CLOCK"  # scraped together: its series share their times
SPECIAL = (float("nan"), float("inf"), float("-inf"), -0.0)


def _labels(metric: str, host: int, gpu: int) -> ref.Labels:
    found = {"__name__": metric, "Hostname": f"h{host}", "gpu": str(gpu)}
    found["modelName"] = "A100" if gpu % 2 else "H100"
    return tuple(sorted(found.items()))


def _samples(rng: np.random.Generator, lo: int, hi: int, gpu: int) -> ref.Samples:
    """Samples about a minute apart in [lo, hi), some exactly on whole minutes, with gaps."""
    found: ref.Samples = []
    ts = lo + (0 if gpu % 3 == 0 else int(rng.integers(1, 59_999)))
    while ts < hi:
        if rng.random() < 0.03:
            ts += int(rng.integers(5, 40)) * MINUTE  # a gap, sometimes past the lookback
            continue
        roll = rng.random()
        value = SPECIAL[int(rng.integers(4))] if roll < 0.04 else float(rng.integers(-40, 90)) / 2
        found.append((ts, value))
        if rng.random() < 0.02:
            found.append((ts, value))  # the same sample again
        ts += MINUTE if gpu % 3 == 0 else int(rng.integers(20_000, 100_000))
    return found


def _batch(metric: str, lo: int, hi: int, seed: int) -> dict[ref.Labels, ref.Samples]:
    rng = np.random.default_rng(seed)
    return {
        _labels(metric, host, gpu): _samples(rng, lo, hi, gpu)
        for host in range(3)
        for gpu in range(4)
        if not (host == 2 and gpu == 3 and seed)  # a series only the first batch has
    }


def _scraped_together(lo: int, hi: int, seed: int) -> dict[ref.Labels, ref.Samples]:
    """Every series at the same times (15 s past each minute, and a few on whole minutes),
    but one that stops for a while and one that starts late: their blocks keep the shared
    times once."""
    rng = np.random.default_rng(seed)
    times = [t + (0 if rng.random() < 0.1 else 15_000) for t in range(lo, hi, MINUTE)]
    found = {}
    for host in range(3):
        for gpu in range(4):
            chosen = times
            if (host, gpu) == (1, 2):
                chosen = [t for t in times if not lo + 90 * MINUTE <= t < lo + 110 * MINUTE]
            if (host, gpu) == (2, 0):
                chosen = [t for t in times if t >= lo + 20 * MINUTE]
            found[_labels(CLOCK, host, gpu)] = [
                (t, SPECIAL[int(rng.integers(4))] if rng.random() < 0.03 else
                 float(rng.integers(100, 200)) / 2)
                for t in chosen
            ]  # fmt: skip
    return found


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Engine]:
    engine = Engine(str(warehouses.empty(tmp_path_factory.mktemp("native") / "w.duckdb")))
    first = _batch(TEMP, T, T + 300 * MINUTE, 0)
    first[_labels(TEMP, 7, 0)] = [(T + (200 + i) * MINUTE, float(i)) for i in range(15)]  # short
    power = _batch(POWER, T, T + 300 * MINUTE, 0)
    power[_labels(POWER, 0, 0)].insert(50, (T + 50 * MINUTE + 1_000, STALE))
    clock = _scraped_together(T, T + 300 * MINUTE, 0)
    ref.load_wanka(engine, {**first, **power, **clock})
    cur = engine.cursor()
    compact(cur, now=datetime.fromtimestamp((T + 260 * MINUTE) / 1000, UTC))  # 2 windows
    ref.load_wanka(engine, _batch(TEMP, T + 30 * MINUTE, T + 50 * MINUTE, 1))  # late
    compact(cur, now=datetime.fromtimestamp((T + 260 * MINUTE) / 1000, UTC))  # an extra block
    ref.load_wanka(engine, _batch(TEMP, T + 70 * MINUTE, T + 140 * MINUTE, 2))  # late, hot
    cur.close()
    yield engine
    engine.close()


def both(eng: Engine, compiled: evaluate.Compiled) -> tuple[dict[str, Any], Any]:
    """The SQL route's answer and the fast path's (None where it left the query to SQL)."""
    cur = eng.cursor()
    try:
        fast = render.answer(
            compiled,
            lambda sql: cur.execute(sql).fetchall(),
            lambda sql, params: cur.sql(sql, params=params).to_arrow_table(),
        )
        taken = compiled.native is not None and native.answer(
            compiled.native, lambda sql, params: cur.sql(sql, params=params).to_arrow_table()
        )
    finally:
        cur.close()
    general = ours(eng, compiled)
    if not taken:
        return general, None
    assert isinstance(fast, bytes)
    return general, {"status": "success", "data": json.loads(fast)}


AGGREGATIONS = ("sum", "avg", "min", "max", "count")
GROUPINGS = ("", " by (Hostname)", " by (modelName, gpu)", " without (gpu)", " by (nothing)")
INNER = (
    "{m}",
    "{m}{{gpu=~'1|2'}}",
    "{m}{{Hostname!='h1'}} offset 4m",
    "sum_over_time({m}[{r}])",
    "avg_over_time({m}[{r}] offset 3m)",
    "min_over_time({m}[{r}])",
    "max_over_time({m}{{gpu!='0'}}[{r}])",
    "count_over_time({m}[{r}] offset -2m)",
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    op=st.sampled_from(AGGREGATIONS),
    grouping=st.sampled_from(GROUPINGS),
    inner=st.sampled_from(INNER),
    steps_in_range=st.integers(1, 6),
    step_s=st.sampled_from([30, 60, 120, 300, 600, 37]),
    start_s=st.integers(-600, 300 * 60),
    points=st.integers(0, 60),
    metric=st.sampled_from([TEMP, TEMP, TEMP, POWER, CLOCK]),
)
def test_the_fast_path_answers_as_the_sql_route(
    eng: Engine,
    op: str,
    grouping: str,
    inner: str,
    steps_in_range: int,
    step_s: int,
    start_s: int,
    points: int,
    metric: str,
) -> None:
    step = step_s * 1000
    expression = f"{op}{grouping} ({inner.format(m=metric, r=f'{steps_in_range * step_s}s')})"
    start = T + start_s * 1000
    compiled = evaluate.range_query(expression, start, start + points * step, step)
    assert compiled.native is not None, expression
    general, fast = both(eng, compiled)
    assert general["status"] == "success", general
    if metric == POWER and start <= T + 48 * MINUTE and start + points * step >= T + 56 * MINUTE:
        assert fast is None  # staleness markers in the window: the SQL route
    if fast is not None:
        assert not ref.differences(fast, general), (expression, ref.differences(fast, general))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    op=st.sampled_from(AGGREGATIONS),
    grouping=st.sampled_from(GROUPINGS),
    inner=st.sampled_from(INNER),
    range_s=st.sampled_from([60, 300, 3600, 37]),
    at_s=st.integers(-600, 300 * 60),
)
def test_an_instant_answers_as_the_sql_route(
    eng: Engine, op: str, grouping: str, inner: str, range_s: int, at_s: int
) -> None:
    expression = f"{op}{grouping} ({inner.format(m=TEMP, r=f'{range_s}s')})"
    compiled = evaluate.instant(expression, T + at_s * 1000)
    general, fast = both(eng, compiled)
    assert fast is not None, expression
    assert not ref.differences(fast, general), (expression, ref.differences(fast, general))


def test_the_window_is_hot_and_cold(eng: Engine) -> None:
    """The comparisons above read blocks, an extra block and hot samples of one window."""
    [(blocks, windows)] = eng.con.execute(
        "SELECT count(*), count(DISTINCT window_start) FROM wanka.gpu_blocks "
        f"WHERE metric = '{TEMP}'"
    ).fetchall()
    [(hot,)] = eng.con.execute(
        "SELECT count(*) FROM gpu_metrics WHERE metric = ? AND ts < ?",
        [TEMP, datetime.fromtimestamp((T + 240 * MINUTE) / 1000, UTC)],
    ).fetchall()
    assert blocks > windows == 2 and hot > 0


def test_series_scraped_together_keep_their_times_once(eng: Engine) -> None:
    """The comparisons above read blocks whose series share their times (`Runs`): in one
    window all of them the same times, in another not."""
    shared = set()
    for (data,) in eng.con.execute(
        "SELECT data FROM wanka.gpu_blocks WHERE metric = ?", [CLOCK]
    ).fetchall():
        _, runs, times, _ = blocks.decode_samples(data)
        assert len(times.lengths) < len(runs) == 12
        shared.add(len(times.lengths) == 1)
    assert shared == {True, False}


@pytest.mark.parametrize(
    "expression",
    [
        "DCGM_FI_DEV_GPU_TEMP",  # no aggregation
        "sum(rate(DCGM_FI_DEV_GPU_TEMP[5m]))",
        "topk(2, DCGM_FI_DEV_GPU_TEMP)",
        "quantile(0.5, DCGM_FI_DEV_GPU_TEMP)",
        "stddev(DCGM_FI_DEV_GPU_TEMP)",
        "sum(DCGM_FI_DEV_GPU_TEMP @ 1790000000)",
        "sum(max_over_time(DCGM_FI_DEV_GPU_TEMP[10m:1m]))",
        "sum(last_over_time(DCGM_FI_DEV_GPU_TEMP[10m]))",
        "sum({__name__=~'DCGM_FI_DEV_.*'})",  # no one metric
        "sum(DCGM_FI_DEV_GPU_TEMP) + 1",
        "sum by (__name__) (sum_over_time(DCGM_FI_DEV_GPU_TEMP[10m]))",
        "sum(avg_over_time(DCGM_FI_DEV_GPU_TEMP[7m]))",  # not whole steps of 2 min
    ],
)
def test_other_shapes_take_the_sql_route(expression: str) -> None:
    compiled = evaluate.range_query(expression, T, T + 3_600_000, 120_000)
    assert compiled.native is None


def test_the_switch_turns_it_off() -> None:
    with mock.patch.object(native, "ENABLED", False):
        assert evaluate.range_query(f"sum({TEMP})", T, T + 3_600_000, 60_000).native is None
    assert evaluate.range_query(f"sum({TEMP})", T, T + 3_600_000, 60_000).native is not None


def test_prom_samples_metrics_take_the_sql_route(eng: Engine) -> None:
    """A metric with no gpu_series (or with prom_samples in the window) is left to SQL."""
    compiled = evaluate.range_query("sum(up)", T, T + 3_600_000, 60_000)
    assert compiled.native is not None
    assert (
        native.answer(
            compiled.native, lambda sql, params: eng.con.sql(sql, params=params).to_arrow_table()
        )
        is None
    )


def test_a_cap_on_series_and_a_stop_are_kept(eng: Engine) -> None:
    compiled = evaluate.range_query(f"sum by (gpu) ({TEMP})", T, T + 3_600_000, 60_000)
    assert compiled.native is not None

    def run(sql: str, params: dict[str, Any]) -> Any:
        return eng.con.sql(sql, params=params).to_arrow_table()

    assert native.answer(compiled.native, run, max_series=3) is None  # 4 series: SQL refuses
    assert native.answer(compiled.native, run, max_series=4) is not None

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with pytest.raises(Stop):
        native.answer(compiled.native, run, stop)


def test_blocks_that_change_while_it_reads_leave_the_query_to_sql(
    tmp_path: Path, warehouses: Warehouses
) -> None:
    """Its statements are not one snapshot: when a compaction moves hot samples into blocks
    after the blocks were listed, the answer would miss those samples; the statement that
    reads the hot samples sees that the blocks changed, and the SQL route answers."""
    with Engine(str(warehouses.empty(tmp_path / "w.duckdb"))) as engine:
        ref.load_wanka(engine, _batch(TEMP, T, T + 100 * MINUTE, 0))
        compiled = evaluate.range_query(f"sum({TEMP})", T, T + 100 * MINUTE, 60_000)
        assert compiled.native is not None
        calls: list[str] = []

        def run(sql: str, params: dict[str, Any]) -> Any:
            calls.append(sql)
            if len(calls) == 2:  # the series and blocks were listed: now the hot samples
                cur = engine.cursor()
                moved = compact(cur, now=datetime.fromtimestamp((T + 100 * MINUTE) / 1000, UTC),
                                flush=FLUSH)  # fmt: skip
                cur.close()
                assert moved
            return engine.con.sql(sql, params=params).to_arrow_table()

        assert native.answer(compiled.native, run) is None
        assert native.answer(
            compiled.native, lambda s, p: engine.con.sql(s, params=p).to_arrow_table()
        )
