"""Trivial-query load, the server's CPU and a profile: shared by bench_http and bench_pgwire.

The load comes from C clients, so the figures are the server's and not a Python client's:
wrk (HTTP, Debian's `wrk`) and pgbench (PostgreSQL's own, with the server packages). Each run
reports queries/s, latency percentiles and the server's CPU seconds per query read from
/proc (steal time on a shared machine moves queries/s more than CPU per query). `profile` runs
py-spy on the server for the length of one run and sums where the GIL was held.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Run:
    """One load run: queries/s, latency percentiles (ms), the server's CPU per query (ms)."""

    qps: float
    p50_ms: float
    p99_ms: float
    cpu_ms: float | None = None


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` (every thread) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def with_cpu(pid: int | None, load: Callable[[], tuple[float, float, float, int]]) -> Run:
    """Run `load` (→ qps, p50, p99, queries) and note `pid`'s CPU per query meanwhile."""
    before = cpu_seconds(pid) if pid else 0.0
    qps, p50, p99, count = load()
    used = (cpu_seconds(pid) - before) if pid else None
    return Run(qps, p50, p99, used / count * 1000 if used is not None and count else None)


def median(runs: list[Run]) -> Run:
    cpu = [r.cpu_ms for r in runs if r.cpu_ms is not None]
    return Run(
        statistics.median(r.qps for r in runs),
        statistics.median(r.p50_ms for r in runs),
        statistics.median(r.p99_ms for r in runs),
        statistics.median(cpu) if cpu else None,
    )


# -- wrk --------------------------------------------------------------------------------------

WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = '{body}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "{authorization}"
"""


def wrk(
    url: str, body: str, authorization: str, clients: int, seconds: float
) -> tuple[float, float, float, int]:
    """POST `body` to `url` from `clients` connections for `seconds` (wrk, 2 threads)."""
    if shutil.which("wrk") is None:
        raise SystemExit("the trivial-query load needs wrk: apt-get install wrk (Debian)")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT.format(body=body, authorization=authorization))
    try:
        done = subprocess.run(
            ["wrk", "-t", "2", "-c", str(clients), "-d", f"{seconds:g}s", "--latency", "-s",
             script.name, url],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    finally:
        os.unlink(script.name)
    return _wrk_figures(done.stdout)


def _wrk_figures(text: str) -> tuple[float, float, float, int]:
    """(requests/s, p50 ms, p99 ms, requests) from wrk's --latency report.

    >>> report = "  50%   31.10ms\\n  99%    1.20s\\n  9 requests in 1s\\nRequests/sec:  9.5\\n"
    >>> _wrk_figures(report)
    (9.5, 31.1, 1200.0, 9)
    """
    found: dict[str, float] = {}
    count = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("50%", "99%"):
            found[parts[0]] = _ms(parts[1])
        elif parts[:1] == ["Requests/sec:"]:
            found["qps"] = float(parts[1])
        elif len(parts) > 2 and parts[1:3] == ["requests", "in"]:
            count = int(parts[0])
    errors = [line for line in text.splitlines() if "Non-2xx" in line or "Socket errors" in line]
    if errors:
        raise RuntimeError(f"wrk saw errors: {errors}")
    return found["qps"], found["50%"], found["99%"], count


def _ms(value: str) -> float:
    for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0), ("m", 60_000.0)):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * scale
    raise ValueError(value)


# -- pgbench ----------------------------------------------------------------------------------


def pgbench(
    host: str, port: int, user: str, password: str, clients: int, seconds: float, mode: str
) -> tuple[float, float, float, int]:
    """`SELECT 1` from `clients` pgbench connections for `seconds`; `mode` simple|extended.

    Latency percentiles come from pgbench's per-transaction log (-l).
    """
    binary = shutil.which("pgbench") or _pg_binary("pgbench")
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "select1.sql"
        script.write_text("SELECT 1;\n")
        subprocess.run(
            [binary, "-h", host, "-p", str(port), "-U", user, "-n", "-c", str(clients),
             "-j", "2", "-T", f"{seconds:g}", "-M", mode, "-f", str(script), "-l",
             "--log-prefix", str(Path(folder) / "log"), "postgres"],
            capture_output=True, text=True, check=True, cwd=folder,
            env={**os.environ, "PGPASSWORD": password},
        )  # fmt: skip
        latencies: list[int] = []
        for log in Path(folder).glob("log*"):
            latencies += [int(line.split()[2]) for line in log.read_text().splitlines()]
    latencies.sort()
    count = len(latencies)
    if not count:
        raise RuntimeError("pgbench completed no transaction")
    return (
        count / seconds,
        latencies[count // 2] / 1000,
        latencies[min(count - 1, int(count * 0.99))] / 1000,
        count,
    )


def _pg_binary(name: str) -> str:
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / name).exists():
            return str(folder / name)
    raise SystemExit(f"{name} not found: apt-get install postgresql")


# -- profile ----------------------------------------------------------------------------------


def profile(pid: int, seconds: float, during: Callable[[], object]) -> list[str]:
    """Where `pid` held the GIL while `during()` ran: the top functions by self and by total
    share of py-spy's samples (lines for the report); [] without py-spy."""
    spy = shutil.which("py-spy") or str(Path(os.__file__).parents[2] / "bin" / "py-spy")
    if not Path(spy).exists():
        venv = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "py-spy"
        spy = str(venv) if venv.exists() else ""
    if not spy:
        return ["(py-spy is not installed: no profile)"]
    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as out:
        path = out.name
    spy_run = subprocess.Popen(
        [spy, "record", "-p", str(pid), "-d", f"{seconds:g}", "-r", "100", "-f", "raw", "--gil",
         "--nonblocking", "-o", path],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        during()
    finally:
        spy_run.wait(timeout=seconds + 60)
    try:
        return _summary(Path(path).read_text())
    finally:
        os.unlink(path)


def _summary(raw: str, top: int = 12) -> list[str]:
    own: Counter[str] = Counter()
    inside: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = [f for f in stack.split(";") if not f.startswith("thread (")]
        n = int(count)
        total += n
        own[_short(frames[-1])] += n
        for frame in {_short(f) for f in frames}:
            where = frame.split(" (", 1)[-1]
            if where.startswith(("service/", "warehouse/", "duckdb/")) and not where.startswith(
                ("service/cli.py", "service/commands/")
            ):
                inside[frame] += n
    if not total:
        return ["(no samples)"]
    lines = [f"py-spy, {total} samples of the thread holding the GIL", "", "| self | function |"]
    lines.append("|---:|---|")
    lines += [f"| {100 * n / total:.1f} % | `{f}` |" for f, n in own.most_common(top)]
    lines += ["", "| total | in wanka or duckdb |", "|---:|---|"]
    lines += [f"| {100 * n / total:.1f} % | `{f}` |" for f, n in inside.most_common(top)]
    return lines


REPO = Path(__file__).resolve().parents[1]


def _short(frame: str) -> str:
    """`name (/path/to/site-packages/pkg/mod.py:12)` → `name (pkg/mod.py:12)`.

    >>> _short(f"answer ({REPO}/service/http/routes_query.py:49)")
    'answer (service/http/routes_query.py:49)'
    """
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").removeprefix(f"{REPO}/")
    for marker in ("site-packages/", "/lib/python3.11/"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})"
