"""The PromQL result cache (warehouse/promql/result_cache.py): whatever the order of queries,
writes and the clock, an answer made from kept steps and newly evaluated ones equals the answer
evaluated whole; a write into the kept past empties it; it stays within its points."""

from __future__ import annotations

import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from warehouse.promql.result_cache import ResultCache, cacheable

STEP = 30_000
LOOKBACK = 300_000
T0 = 1_800_000_000_000


class Store:
    """A stand-in for the warehouse: samples (series, ms) written, and a range query whose
    value at each step is how many samples of each series lie in its lookback (a series with
    none there has no point at that step), as a PromQL step reads only what is before it."""

    def __init__(self) -> None:
        self.samples: list[tuple[str, int]] = []
        self.evaluated = 0  # steps evaluated, all queries together

    def answer(self, lo: int, hi: int) -> bytes:
        result = []
        for series in sorted({s for s, _ in self.samples}):
            times = [t for s, t in self.samples if s == series]
            values = []
            for step in range(lo, hi + 1, STEP):
                self.evaluated += 1
                n = sum(1 for t in times if step - LOOKBACK < t <= step)
                if n:
                    seconds = step // 1000 if step % 1000 == 0 else step / 1000
                    values.append([seconds, str(n)])
            if values:
                result.append({"metric": {"__name__": "m", "s": series}, "values": values})
        return json.dumps({"resultType": "matrix", "result": result}).encode()


def read(answer: object) -> object:
    """A matrix answer the cache made: JSON bytes."""
    assert isinstance(answer, bytes)
    return json.loads(answer)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("advance"), st.integers(1, 400)),  # seconds
        st.tuples(st.just("write"), st.sampled_from("abc"), st.integers(0, 900)),  # age in s
        st.tuples(st.just("query"), st.sampled_from([10, 40]), st.sampled_from([0, 7_000])),
    ),
    max_size=40,
)


@settings(max_examples=examples(2), deadline=None)
@given(operations)
def test_answers_equal_the_query_evaluated_whole(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    """Grafana-like windows (their end on the step, a fixed length) over a clock that moves on,
    with writes now and in the past: every answer is the one the whole query gives."""
    now = [T0 + 3_600_000]
    store = Store()
    kinds: Counter[str] = Counter()
    cache = ResultCache(
        offset_s=300, clock=lambda: now[0] / 1000, answered=lambda kind: kinds.update([kind])
    )
    for op in ops:
        if op[0] == "advance":
            now[0] += op[1] * 1000
        elif op[0] == "write":
            ts = now[0] - op[2] * 1000
            store.samples.append((op[1], ts))
            cache.note_write("remote_write", ts)
        else:
            _, steps, phase = op
            end = (now[0] - phase) // STEP * STEP + phase
            start = end - steps * STEP
            got = cache.range_answer(("user", "m"), start, end, STEP, store.answer)
            assert read(got) == json.loads(store.answer(start, end))


def test_a_moving_window_evaluates_only_its_newest_steps() -> None:
    """The second look at a one-hour panel 30 s later evaluates the steps of the last 5 min
    and the new one, not the hour."""
    now = [T0 + 7_200_000]
    store = Store()
    store.samples = [(s, T0 + k * 15_000) for s in "ab" for k in range(600)]
    cache = ResultCache(offset_s=300, clock=lambda: now[0] / 1000)
    end = now[0] // STEP * STEP
    cache.range_answer(("u", "m"), end - 3_600_000, end, STEP, store.answer)
    first = store.evaluated
    now[0] += STEP
    got = cache.range_answer(("u", "m"), end - 3_600_000 + STEP, end + STEP, STEP, store.answer)
    assert read(got) == json.loads(store.answer(end - 3_600_000 + STEP, end + STEP))
    evaluated = store.evaluated - 2 * first  # less the whole query just asked for comparison
    assert first == 2 * 121 and evaluated <= 2 * (300_000 // STEP + 2)


def test_writes_empty_it_only_where_they_reach_the_kept_past() -> None:
    now = [T0 + 7_200_000]
    kinds: Counter[str] = Counter()
    cache = ResultCache(
        offset_s=300, clock=lambda: now[0] / 1000, answered=lambda kind: kinds.update([kind])
    )
    store = Store()
    store.samples = [("a", T0 + k * 15_000) for k in range(400)]
    end = now[0] // STEP * STEP

    def ask() -> None:
        cache.range_answer(("u", "m"), end - 3_600_000, end, STEP, store.answer)

    ask()
    points = cache.points
    assert points > 0
    for writer, oldest in (
        ("remote_write", now[0] - 10_000),  # samples of the last seconds
        ("refresh", None),  # dynamic tables, tiers, compaction, Slurm: no samples
        ("compaction", None),
        ("tiers", None),
        ("slurm", None),
    ):
        cache.note_write(writer, oldest)
        assert cache.points == points, writer
    ask()
    assert kinds == Counter({"miss": 1, "partial": 1})
    for writer, oldest in (("remote_write", now[0] - 600_000), ("sql", None), ("ingest", None)):
        cache.note_write(writer, oldest)  # into the past, or cannot say: emptied
        assert cache.points == 0, writer
        ask()


def test_it_keeps_within_its_points_and_passes_large_answers_by() -> None:
    now = [T0 + 7_200_000]
    store = Store()
    store.samples = [(s, T0 + k * 15_000) for s in "abc" for k in range(400)]
    cache = ResultCache(offset_s=300, max_points=1_000, clock=lambda: now[0] / 1000)
    end = now[0] // STEP * STEP
    for steps in range(10, 60, 5):
        start = end - steps * STEP
        got = cache.range_answer(("u", "m"), start, end, STEP, store.answer)
        assert read(got) == json.loads(store.answer(start, end))
        assert cache.points <= 1_000
    scalar = {"resultType": "scalar", "result": [1, "2"]}
    assert cache.range_answer(("u", "s"), end - STEP, end, STEP, lambda lo, hi: scalar) is scalar


def test_what_may_be_kept() -> None:
    assert cacheable('avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=~"0|1"}[1h]))')
    assert cacheable("rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m] offset 1h)")
    for expression in (
        "DCGM_FI_DEV_GPU_TEMP @ start()",
        "DCGM_FI_DEV_GPU_TEMP @ 1700000000",
        "max_over_time(rate(x[5m])[1h:1m])",
        "max_over_time(x[1h:])",
        "x offset -5m",
    ):
        assert not cacheable(expression), expression
