"""Every expression of corpus.promql, as `query` (at three moments) and `query_range` (two
step widths), against wanka and a real Prometheus 2.42 holding the same samples: the same
series, labels, timestamps and values (1e-9 relative), or both refusing it. The report
prints every difference."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.warehouse.promql import reference as ref
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.promql import evaluate, render
from warehouse.promql.plan import PromQLError

CORPUS = Path(__file__).with_name("corpus.promql")
pytestmark = pytest.mark.skipif(not ref.available(), reason="no prometheus/promtool binary")

#: instants: mid-hour, inside the gap GPU 3 of host 2 has, and past the last sample
INSTANTS = (ref.T0 + 1_807_000, ref.T0 + 1_900_000, ref.T_END + 130_000)
RANGES = (
    (ref.T0 + 600_000, ref.T_END + 360_000, 60_000),
    (ref.T0, ref.T_END, 137_000),
    (ref.T0 + 15_000, ref.T_END, 300_000),  # steps a lookback apart: instants by GROUP BY
    (ref.T0 - 60_000, ref.T_END + 600_000, 600_000),  # windows of whole steps: by buckets
)


def expressions() -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def both(
    tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses
) -> Iterator[tuple[ref.Reference, Engine]]:
    folder = tmp_path_factory.mktemp("promql")
    series = ref.cluster()
    eng = Engine(str(warehouses.empty(folder / "wanka.duckdb")))
    ref.load_wanka(eng, series)
    for prometheus in ref.start(folder, series):
        yield prometheus, eng
    eng.close()


def ours(eng: Engine, compiled: Any) -> dict[str, Any]:
    """What the query API answers (`render.answer`, the path /api/v1/query* take)."""
    try:
        data = render.answer(compiled, lambda sql: eng.con.execute(sql).fetchall())
    except Exception as error:
        return {"status": "error", "errorType": "execution", "error": str(error)}
    return {"status": "success", "data": json.loads(data) if isinstance(data, bytes) else data}


def wanka_query(eng: Engine, expression: str, at_ms: int) -> dict[str, Any]:
    try:
        compiled = evaluate.instant(expression, at_ms)
    except PromQLError as error:
        return {"status": "error", "errorType": error.kind, "error": str(error)}
    return ours(eng, compiled)


def wanka_range(eng: Engine, expression: str, start: int, end: int, step: int) -> dict[str, Any]:
    try:
        compiled = evaluate.range_query(expression, start, end, step)
    except PromQLError as error:
        return {"status": "error", "errorType": error.kind, "error": str(error)}
    return ours(eng, compiled)


def test_the_corpus_is_big_enough() -> None:
    assert len(expressions()) >= 150
    assert len(set(expressions())) == len(expressions())


def test_every_expression_answers_as_prometheus_does(
    both: tuple[ref.Reference, Engine], capsys: pytest.CaptureFixture[str]
) -> None:
    prometheus, eng = both
    report: list[str] = []
    compared = 0
    kinds: Counter[str] = Counter()
    for expression in expressions():
        for at in INSTANTS:
            theirs = prometheus.query("/api/v1/query", {"query": expression, "time": at / 1000})
            found = ref.differences(wanka_query(eng, expression, at), theirs)
            kinds[ref.shape(theirs)] += 1
            report += [f"query {expression!r} @{at / 1000}: {d}" for d in found[:3]]
            compared += 1
        for start, end, step in RANGES:
            params = {"query": expression, "start": start / 1000, "end": end / 1000,
                      "step": step / 1000}  # fmt: skip
            theirs = prometheus.query("/api/v1/query_range", params)
            found = ref.differences(wanka_range(eng, expression, start, end, step), theirs)
            kinds[ref.shape(theirs)] += 1
            report += [f"query_range {expression!r} step {step / 1000}s: {d}" for d in found[:3]]
            compared += 1
    with capsys.disabled():
        print(f"\n{compared} answers compared, {len(report)} differences; Prometheus's were:")
        print("  " + ", ".join(f"{n} {kind}" for kind, n in kinds.most_common()))
        for line in report:
            print("  " + line[:600])
    assert not report
    # most answers hold data: a corpus of empty answers would prove nothing
    assert kinds["error"] <= 0.04 * compared and kinds["empty"] <= 0.08 * compared


def test_the_comparison_sees_a_difference() -> None:
    def answer(value: str, labels: dict[str, str], t: float = 1.0) -> dict[str, Any]:
        result = [{"metric": labels, "values": [[t, value]]}]
        return {"status": "success", "data": {"resultType": "matrix", "result": result}}

    same = answer("1.5", {"a": "1"})
    assert ref.differences(same, answer("1.5000000000001", {"a": "1"})) == []
    assert ref.differences(same, answer("1.50001", {"a": "1"}))
    assert ref.differences(same, answer("1.5", {"a": "2"}))
    assert ref.differences(same, answer("1.5", {"a": "1"}, 2.0))
    assert ref.differences(answer("NaN", {}), answer("NaN", {})) == []
    assert ref.differences(answer("NaN", {}), answer("0", {}))
    refused = {"status": "error", "error": "x"}
    assert ref.differences(refused, same) and ref.differences(same, refused)
