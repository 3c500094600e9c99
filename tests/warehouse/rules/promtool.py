"""promtool (Prometheus 2.42, `/usr/bin/promtool`) as the oracle of the rule tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "corpus"
PROMTOOL = shutil.which("promtool")

needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool (Prometheus 2.42) is not installed"
)


def promtool(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def corpus_files() -> list[Path]:
    """Every YAML file of the corpus: rule files, valid and invalid, and promtool test files."""
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".yml", ".yaml"))
