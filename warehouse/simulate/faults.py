"""Faults injected into a simulated cluster, with their ground truth, to test the health rules.

`SimConfig.faults` asks for that many faults of each kind, drawn on distinct GPUs and hosts
after the schedule is fixed (so the rest of the simulation is the same with or without them):

    slow_gpu     one GPU of a busy multi-node job (training in lock step: utilisation 60 % and
                 more) 10-20 % slower from a time inside the job to its end: SM and tensor
                 activity and the power above idle scaled down (a GPU whose clocks or memory
                 hold the job back; its peers wait at each collective)
    ecc_climb    a GPU whose corrected (SBE) ECC count climbs, nearly every scrape, for 1-3 h
                 and that then fails with XID 94 (contained ECC error) or 79 (fell off the bus)
    thermal      a GPU running 12-20 °C hotter than its power explains for 1-4 h, clocks cut
                 8-15 % (a failing fan, heat sink or thermal interface)

Durations are cut to what the window holds.
    silent_host  a host whose exporter stops: none of its GPUs reports from a time on, while the
                 scheduler still counts the node up
    bad_nic      a host whose compute NIC runs at 55-65 % from a time on (a bad cable or
                 transceiver): seen in the nccl-tests probes that touch it

`truth/faults.csv` (written with the other truth) lists each fault: kind, host, gpu (empty for
a host fault), job_id (slow_gpu), start_at (the first affected scrape or probe), end_at (after
the last; the window's end when it lasts), magnitude (the slowdown, °C, NIC factor, XID code)
and a detail text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

KINDS = ("slow_gpu", "ecc_climb", "thermal", "silent_host", "bad_nic")
#: What a health window is: the rules look at 5-minute windows.
WINDOW_S = 300


@dataclass(frozen=True)
class Fault:
    """One injected fault: kind, host index, column (-1: the whole host), window job (-1: none),
    its first and past-the-end scrape, and its size (slowdown, +°C, XID code, NIC factor)."""

    kind: str
    host: int
    col: int
    job: int
    k0: int
    k1: int
    magnitude: float
    detail: str


@dataclass(frozen=True)
class Faults:
    """The injected faults as scrape ranges the telemetry applies, and their truth rows."""

    slow: np.ndarray  # (k0, k1, col, factor) float rows
    hot: np.ndarray  # (k0, k1, col, +°C, clock factor)
    silent: np.ndarray  # (k0, host) int rows: the host's columns send nothing from k0
    sbe: np.ndarray  # (k, col) extra SBE increments
    xid: np.ndarray  # (k, col, code) extra XIDs
    bad_nics: tuple[tuple[int, float, float], ...]  # (host, onset s after start, factor)
    truth: tuple[Fault, ...]

    @staticmethod
    def none() -> Faults:
        return Faults(
            slow=np.empty((0, 4)), hot=np.empty((0, 5)),
            silent=np.empty((0, 2), dtype=np.int64), sbe=np.empty((0, 2), dtype=np.int64),
            xid=np.empty((0, 3), dtype=np.int64), bad_nics=(), truth=(),
        )  # fmt: skip


@dataclass(frozen=True)
class FaultSpace:
    """What faults are drawn from: the window, the reporting columns and the window's jobs."""

    steps: int
    interval_s: float
    col_host: np.ndarray  # per column, its host index
    job_k0: np.ndarray
    job_k1: np.ndarray
    job_cols: list[np.ndarray]
    lockstep: np.ndarray  # per window job: a busy multi-node job (training in lock step)


def draw_faults(space: FaultSpace, per_kind: int, rng: np.random.Generator) -> Faults:
    """`per_kind` faults of each kind on distinct GPUs and hosts (fewer where none fit)."""
    if per_kind <= 0:
        return Faults.none()
    draw = _Draw(space, per_kind, rng)
    slow = draw.slow()
    sbe, xid = draw.ecc()
    hot = draw.thermal()
    silent = draw.silent()
    bad = draw.bad_nics()
    return Faults(slow, hot, silent, sbe, xid, bad, tuple(draw.truth))


class _Draw:
    """Draws each kind in turn; no two faults share a host."""

    def __init__(self, space: FaultSpace, per_kind: int, rng: np.random.Generator) -> None:
        self.space, self.n, self.rng = space, per_kind, rng
        self.window = max(1, round(WINDOW_S / space.interval_s))  # scrapes per window
        self.used: set[int] = set()
        self.truth: list[Fault] = []

    def _col(self, cols: np.ndarray | None = None) -> int | None:
        """A random column among `cols` (default: all) on a host no fault has yet."""
        host_of = self.space.col_host
        pool = np.arange(len(host_of)) if cols is None else np.asarray(cols)
        free = pool[~np.isin(host_of[pool], list(self.used))]
        if not len(free):
            return None
        col = int(free[int(self.rng.integers(len(free)))])
        self.used.add(int(host_of[col]))
        return col

    def _hosts(self) -> list[int]:
        hosts = np.unique(self.space.col_host)
        free = hosts[~np.isin(hosts, list(self.used))]
        chosen = [int(h) for h in self.rng.permutation(free)[: self.n]]
        self.used.update(chosen)
        return chosen

    def _note(self, kind: str, col: int, k0: int, k1: int, size: float, detail: str,
              host: int | None = None, job: int = -1) -> None:  # fmt: skip
        host = int(self.space.col_host[col]) if host is None else host
        self.truth.append(Fault(kind, host, col, job, k0, k1, size, detail))

    def slow(self) -> np.ndarray:
        """Slow GPUs inside busy multi-node jobs long enough to show it (10 windows or more),
        from a time 2 windows after the job's start to 7 before its end or more."""
        s, w = self.space, self.window
        jobs = np.flatnonzero(s.lockstep & (s.job_k1 - s.job_k0 >= 10 * w))
        rows: list[tuple[float, float, float, float]] = []
        for job in self.rng.permutation(jobs).tolist():
            if len(rows) == self.n:
                break
            col = self._col(s.job_cols[job])
            if col is None:
                continue
            k0, k1 = int(s.job_k0[job]), int(s.job_k1[job])
            onset = int(self.rng.integers(k0 + 2 * w, k1 - 7 * w + 1))
            slowdown = float(self.rng.uniform(0.10, 0.20))
            rows.append((onset, k1, col, 1 - slowdown))
            self._note("slow_gpu", col, onset, k1, slowdown, f"{slowdown:.0%} slower", job=job)
        return np.array(rows, dtype=np.float64).reshape(-1, 4)

    def ecc(self) -> tuple[np.ndarray, np.ndarray]:
        """SBE counts climbing for 1-3 h (at most the window less 2 windows), nearly every
        scrape, then XID 94 or 79."""
        sbe: list[tuple[int, int]] = []
        xid: list[tuple[int, int, int]] = []
        longest = self.space.steps - 2 * self.window
        for _ in range(self.n):
            climb = min(longest, int(self.rng.uniform(1, 3) * 3600 / self.space.interval_s))
            if climb < 2 * self.window:
                break
            col = self._col()
            if col is None:
                break
            onset = int(self.rng.integers(0, self.space.steps - climb))
            hits = np.flatnonzero(self.rng.random(climb) < np.linspace(0.5, 0.95, climb))
            hits = np.unique(np.append(hits, 0)) + onset  # the climb starts at an increment
            sbe.extend((int(k), col) for k in hits)
            code = int(self.rng.choice([94, 79]))
            xid.append((onset + climb, col, code))
            detail = f"{len(hits)} SBE increments over {climb} scrapes, then XID {code}"
            self._note("ecc_climb", col, onset, onset + climb + 1, code, detail)
        sbe_rows = np.array(sbe, dtype=np.int64).reshape(-1, 2)
        return sbe_rows, np.array(xid, dtype=np.int64).reshape(-1, 3)

    def thermal(self) -> np.ndarray:
        """GPUs running hot for 1-4 h (at most the window), clocks cut."""
        rows: list[tuple[float, float, float, float, float]] = []
        for _ in range(self.n):
            hours = self.rng.uniform(1, 4)
            length = min(self.space.steps, int(hours * 3600 / self.space.interval_s))
            if length < 3 * self.window:
                break
            col = self._col()
            if col is None:
                break
            onset = int(self.rng.integers(0, self.space.steps - length + 1))
            delta, clock = float(self.rng.uniform(12, 20)), float(self.rng.uniform(0.85, 0.92))
            rows.append((onset, onset + length, col, delta, clock))
            detail = f"+{delta:.1f} °C, clocks x{clock:.2f}"
            self._note("thermal", col, onset, onset + length, delta, detail)
        return np.array(rows, dtype=np.float64).reshape(-1, 5)

    def silent(self) -> np.ndarray:
        """Hosts whose exporter stops, after the first 2 windows and 6 before the end."""
        steps, w = self.space.steps, self.window
        rows: list[tuple[int, int]] = []
        for host in self._hosts():
            lo = min(steps - 1, 2 * w)
            onset = int(self.rng.integers(lo, max(lo + 1, steps - 6 * w)))
            rows.append((onset, host))
            self._note("silent_host", -1, onset, steps, 0.0, "exporter stopped; node up", host)
        return np.array(rows, dtype=np.int64).reshape(-1, 2)

    def bad_nics(self) -> tuple[tuple[int, float, float], ...]:
        """Hosts whose NIC degrades in the first three quarters of the window."""
        out: list[tuple[int, float, float]] = []
        span_s = self.space.steps * self.space.interval_s
        for host in self._hosts():
            onset_s = float(self.rng.uniform(0, 0.75) * span_s)
            factor = float(self.rng.uniform(0.55, 0.65))
            out.append((host, onset_s, factor))
            onset = int(np.ceil(onset_s / self.space.interval_s - 1e-9))
            detail = f"NIC at {factor:.0%} of its bandwidth"
            self._note("bad_nic", -1, onset, self.space.steps, factor, detail, host)
        return tuple(out)


def truth_table(
    faults: Faults,
    host_names: list[str],
    col_gpu: np.ndarray,
    job_names: list[str],
    start_us: int,
    interval_us: int,
) -> pa.Table:
    """truth/faults.csv's rows: the faults with host names, GPU indices, jobs and times."""
    rows = faults.truth
    times = pa.timestamp("us", "UTC")
    return pa.table({
        "kind": pa.array([f.kind for f in rows], pa.string()),
        "host": pa.array([host_names[f.host] for f in rows], pa.string()),
        "gpu": pa.array([None if f.col < 0 else int(col_gpu[f.col]) for f in rows], pa.int32()),
        "job_id": pa.array([None if f.job < 0 else job_names[f.job] for f in rows], pa.string()),
        "start_at": pa.array([start_us + f.k0 * interval_us for f in rows], times),
        "end_at": pa.array([start_us + f.k1 * interval_us for f in rows], times),
        "magnitude": pa.array([f.magnitude for f in rows], pa.float64()),
        "detail": pa.array([f.detail for f in rows], pa.string()),
    })  # fmt: skip
