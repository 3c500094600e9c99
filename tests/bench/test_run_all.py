"""bench/run_all.py: rerunning some benchmarks keeps the other sections of RESULTS.md."""

from __future__ import annotations

import doctest
import importlib.util
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_doctests() -> None:
    assert doctest.testmod(load()).failed == 0


def test_the_committed_results_have_every_benchmark_and_a_date() -> None:
    run_all = load()
    text = (BENCH / "RESULTS.md").read_text(encoding="utf-8")
    names = set(run_all.sections(text))
    assert names == {p.name for p in BENCH.glob("bench_*.py")}
    assert run_all.old_date(text)[:2] == "20"
