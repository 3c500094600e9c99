"""promtool (Prometheus 2.42, `/usr/bin/promtool`) as the oracle of the rule tests."""

from __future__ import annotations

import functools
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


@functools.cache
def check_verdicts() -> dict[Path, bool]:
    """`promtool check rules` on every corpus file in one run: whether it accepts each (its
    stdout says `Checking FILE` then `  SUCCESS: ...` for each file it accepts; a file without
    it, refused or only linted, is asked again alone for its exit status)."""
    files = corpus_files()
    out = promtool("check", "rules", *files).stdout.splitlines()
    verdicts: dict[Path, bool] = {}
    for i, line in enumerate(out):
        if line.startswith("Checking "):
            following = out[i + 1] if i + 1 < len(out) else ""
            path = Path(line.removeprefix("Checking "))
            verdicts[path] = following.startswith("  SUCCESS") or (
                promtool("check", "rules", path).returncode == 0
            )
    assert set(verdicts) == set(files), "promtool did not check every file"
    return verdicts
