"""Run every bench/bench_*.py in turn and write bench/RESULTS.md: the machine, then each output.

Run: .venv/bin/python bench/run_all.py [--only load,http] [--out bench/RESULTS.md]
(`make bench` runs it.) A benchmark that fails is recorded with its exit status and the run
goes on; the exit status is then 1. With `--only`, the named sections of an existing file are
replaced and the others kept, and the header says which ran when.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _field(path: str, prefix: str) -> str | None:
    """The rest of the first line of `path` that starts with `prefix` (None: no file, no line)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    found = _field("/proc/cpuinfo", "model name")
    return found.lstrip(":").strip() if found else platform.processor() or "unknown"


def memory_gib() -> str:
    found = _field("/proc/meminfo", "MemTotal:")
    return f"{int(found.split()[0]) / 1024**2:.1f} GiB" if found else "unknown"


def os_name() -> str:
    found = _field("/etc/os-release", "PRETTY_NAME=")
    return f"{found.strip(chr(34))}, Linux {platform.release()}" if found else platform.platform()


def machine() -> str:
    import duckdb

    rows = [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("CPU", f"{cpu_model()} × {os.cpu_count()} logical CPUs"),
        ("memory", memory_gib()),
        ("OS", os_name()),
        ("Python", platform.python_version()),
        ("DuckDB", duckdb.__version__),
        ("load average at start", ", ".join(f"{v:.2f}" for v in os.getloadavg())),
    ]
    return "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def run(path: Path) -> tuple[str, int, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(path)], cwd=HERE.parent, capture_output=True, text=True
    )
    output = done.stdout
    if done.returncode:
        output += f"\n(exit status {done.returncode})\n{done.stderr[-4000:]}"
    return output.strip(), done.returncode, time.perf_counter() - started


def sections(text: str) -> dict[str, str]:
    """The `## bench_NAME.py (N s)` sections of a results file, by script name.

    >>> found = sections("# R\\n\\n## bench_a.py (1 s)\\n\\nx\\n\\n## bench_b.py (2 s)\\n\\ny\\n")
    >>> found["bench_b.py"]
    '## bench_b.py (2 s)\\n\\ny'
    """
    found = {}
    for chunk in ("\n" + text).split("\n## bench_")[1:]:
        name = "bench_" + chunk.split(" ", 1)[0]
        found[name] = ("## bench_" + chunk).rstrip()
    return found


def old_date(text: str) -> str:
    """The date of the full run a results file comes from.

    >>> old_date("kept from the run of 2026-11-30 01:32 UTC.\\n| date | 2026-12-01 |")
    '2026-11-30 01:32 UTC'
    >>> old_date("| | |\\n| date | 2026-12-01 00:00 UTC |")
    '2026-12-01 00:00 UTC'
    """
    marker = "kept from the run of "
    if marker in text:
        return text.split(marker, 1)[1].split(".\n", 1)[0].rstrip(".")
    for line in text.splitlines():
        if line.startswith("| date |"):
            return line.split("|")[2].strip()
    return "an earlier date"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", help="comma-separated names, e.g. load,http (bench_NAME.py)")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        wanted = {f"bench_{name.strip()}.py" for name in args.only.split(",")}
        scripts = [s for s in scripts if s.name in wanted]
    intro = (
        "Written by `make bench` (`bench/run_all.py`); each section is one script's output, "
        "run one after another on this machine:"
    )
    kept: dict[str, str] = {}
    if args.only and args.out.exists():
        old = args.out.read_text(encoding="utf-8")
        kept = sections(old)
        intro += (
            f"\n\nThis run: {', '.join(s.name for s in scripts)} only (`--only`); the other "
            f"sections are kept from the run of {old_date(old)}."
        )
    parts = ["# Benchmark results", intro, machine()]
    failed = 0
    for script in scripts:
        print(f"== {script.name}", flush=True)
        output, status, seconds = run(script)
        failed += status != 0
        print(output, flush=True)
        kept[script.name] = f"## {script.name} ({seconds:.0f} s)\n\n{output}"
    parts += [kept[name] for name in sorted(kept)]
    args.out.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
