"""Placing jobs on GPUs: an event-driven scheduler with EASY backfill, and GPU failures.

Each cluster is scheduled on its own. Pending jobs are ordered by QOS, then submit time. The
first job that does not fit gets a reservation on the hosts that free up first (by the running
jobs' time limits, all the scheduler knows); later jobs may jump ahead if they end before it or
stay off the reserved hosts. Single-node jobs go best-fit (the fullest host that fits) so whole
nodes stay free for multi-node jobs, which take whole nodes. Hardware XID errors arrive as a
Poisson process per GPU; a fatal one ends the job on that GPU at that moment (FAILED, or
NODE_FAIL for a GPU that fell off the bus) and takes the host out for repair.
"""

from __future__ import annotations

import heapq
import math
from bisect import insort
from dataclasses import dataclass, field

import numpy as np

from warehouse.simulate.config import GPUS_PER_HOST, SimConfig
from warehouse.simulate.inventory import Inventory
from warehouse.simulate.workload import Workload

XID_TEXT = {
    13: "Graphics Engine Exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    48: "Double Bit ECC Error",
    63: "ECC page retirement or row remapping recording event",
    64: "ECC page retirement or row remapper recording failure",
    74: "NVLink Error",
    79: "GPU has fallen off the bus",
    92: "High single-bit ECC error rate",
    94: "Contained ECC error",
    95: "Uncontained ECC error",
}
FATAL_XIDS = frozenset({79, 48, 74, 95})
#: Hardware XIDs and their shares (fatal ones sum to 0.30 of all).
HARDWARE_XIDS = {79: 0.10, 48: 0.05, 74: 0.12, 95: 0.03, 94: 0.10, 63: 0.43, 64: 0.05, 92: 0.12}
#: XIDs an application's own crash leaves behind; seen on 30 % of failed jobs.
APP_XIDS = (13, 31, 43)
_FULL = (1 << GPUS_PER_HOST) - 1
_END, _XID, _REPAIRED, _CANCEL, _ARRIVE = range(5)


@dataclass
class Schedule:
    """How every submitted job went; times in seconds relative to cfg.start, NaN = none."""

    start_s: np.ndarray
    end_s: np.ndarray
    state: np.ndarray
    hosts: list[np.ndarray]  # global host numbers, first host first
    slots: list[tuple[int, ...]]  # GPU indices used on each of those hosts
    host_state: np.ndarray  # inventory state at the end of the window
    #: (t, host, gpu, code) of every XID on a reporting GPU, in time order
    xids: list[tuple[float, int, int, int]] = field(default_factory=list)
    #: (job, t, event, host, gpu, code) of XIDs that hit a running job
    job_xids: list[tuple[int, float, str, int, int, int]] = field(default_factory=list)


def schedule(cfg: SimConfig, inv: Inventory, work: Workload, seed: int) -> Schedule:
    """Run every cluster's scheduler from start − warm-up to the end of the window."""
    n = len(work)
    out = Schedule(
        start_s=np.full(n, np.nan),
        end_s=np.full(n, np.nan),
        state=np.full(n, "PENDING", dtype=object),
        hosts=[np.empty(0, dtype=np.int64)] * n,
        slots=[()] * n,
        host_state=inv.host_state.copy(),
    )
    for index in range(len(inv.plans)):
        rng = np.random.default_rng([seed, 2, index])
        _ClusterScheduler(cfg, inv, work, index, out, rng).run()
    out.xids.sort()
    out.job_xids.sort(key=lambda e: (e[1], e[0]))
    return out


class _ClusterScheduler:
    def __init__(
        self,
        cfg: SimConfig,
        inv: Inventory,
        work: Workload,
        index: int,
        out: Schedule,
        rng: np.random.Generator,
    ) -> None:
        self.work, self.out, self.rng, self.index = work, out, rng, index
        self.seq = 0
        self.horizon = float(cfg.window_s)
        self.host_ids = np.flatnonzero(inv.host_cluster == index)
        n = len(self.host_ids)
        self.base_state = inv.host_state[self.host_ids]
        self.usable = self.base_state == "up"
        self.free_mask = [_FULL] * n
        self.eff = np.where(self.usable, GPUS_PER_HOST, -1).astype(np.int64)
        self.slot_job = np.full((n, GPUS_PER_HOST), -1, dtype=np.int64)
        self.host_jobs: list[set[int]] = [set() for _ in range(n)]
        self.busy_until = np.full(n, -np.inf)  # latest time-limit end of the host's jobs
        self.repair_until = np.where(self.base_state == "up", -np.inf, np.inf)
        self.pending: list[tuple[int, int, int]] = []  # (qos rank, submit, job)
        self.events: list[tuple[float, int, int, int]] = []  # (t, kind, seq, payload)
        for job in np.flatnonzero(work.cluster == index):
            self._push(float(work.submit_s[job]), _ARRIVE, int(job))
        self._plan_hardware_xids(cfg)

    # -- events ------------------------------------------------------------------------------

    def _push(self, t: float, kind: int, payload: int) -> None:
        # seq breaks ties in insertion order, so equal times never compare payloads.
        self.seq += 1
        heapq.heappush(self.events, (t, kind, self.seq, payload))

    def _plan_hardware_xids(self, cfg: SimConfig) -> None:
        reporting = np.flatnonzero(self.base_state != "down")
        fatal_share = sum(w for c, w in HARDWARE_XIDS.items() if c in FATAL_XIDS)
        rate_per_gpu_s = cfg.fatal_xid_per_gpu_h / fatal_share / 3600
        span = cfg.warmup_s + self.horizon
        count = self.rng.poisson(rate_per_gpu_s * span * len(reporting) * GPUS_PER_HOST)
        codes = np.array(list(HARDWARE_XIDS))
        weights = np.array(list(HARDWARE_XIDS.values()))
        self.xid_plan = list(zip(
            np.floor(self.rng.uniform(-cfg.warmup_s, self.horizon, count)).tolist(),
            self.rng.choice(reporting, count).tolist() if len(reporting) else [],
            self.rng.integers(0, GPUS_PER_HOST, count).tolist(),
            self.rng.choice(codes, count, p=weights / weights.sum()).tolist(),
            strict=True,
        ))  # fmt: skip
        for i, (t, *_rest) in enumerate(self.xid_plan):
            self._push(t, _XID, i)

    def run(self) -> None:
        while self.events and self.events[0][0] <= self.horizon:
            now = self.events[0][0]
            changed = False
            while self.events and self.events[0][0] == now:
                _, kind, _, payload = heapq.heappop(self.events)
                changed |= self._handle(now, kind, payload)
            if changed and self.pending:
                self._schedule_pass(now)
        for h, until in enumerate(self.repair_until):
            if self.base_state[h] == "up" and until > self.horizon:
                self.out.host_state[self.host_ids[h]] = "drain"
        out = self.out
        running = (self.work.cluster == self.index) & ~np.isnan(out.start_s) & np.isnan(out.end_s)
        out.state[running] = "RUNNING"

    def _handle(self, now: float, kind: int, payload: int) -> bool:
        work, out = self.work, self.out
        if kind == _ARRIVE:
            insort(self.pending, (int(work.qos[payload]), int(work.submit_s[payload]), payload))
            if math.isfinite(work.patience_s[payload]):
                self._push(now + float(work.patience_s[payload]), _CANCEL, payload)
            return True
        if kind == _END:
            if not np.isnan(out.end_s[payload]):  # a failure ended it already
                return False
            state = str(work.planned[payload])
            self._finish(payload, now, state)
            if state == "FAILED" and self.rng.random() < 0.3:
                self._app_xid(payload, now)
            return True
        if kind == _CANCEL:
            entry = (int(work.qos[payload]), int(work.submit_s[payload]), payload)
            if np.isnan(out.start_s[payload]) and entry in self.pending:
                self.pending.remove(entry)
                out.state[payload], out.end_s[payload] = "CANCELLED", now
            return False
        if kind == _REPAIRED:
            if self.repair_until[payload] == now:
                self.usable[payload] = True
                self.eff[payload] = self.free_mask[payload].bit_count()
                return True
            return False
        return self._xid(now, *self.xid_plan[payload][1:])

    def _xid(self, now: float, host: int, slot: int, code: int) -> bool:
        self.out.xids.append((now, int(self.host_ids[host]), slot, code))
        job = int(self.slot_job[host, slot])
        fatal = code in FATAL_XIDS
        if job >= 0:
            event = "xid_failure" if fatal else "xid"
            self.out.job_xids.append((job, now, event, int(self.host_ids[host]), slot, code))
            if fatal:
                self._finish(job, now, "NODE_FAIL" if code == 79 else "FAILED")
        if not fatal:
            return False
        repair = float(np.round(self.rng.lognormal(math.log(8 * 3600), 0.8)))
        if self.base_state[host] == "up":
            self.usable[host] = False
            self.eff[host] = -1
            self.repair_until[host] = max(self.repair_until[host], now + repair)
            self._push(float(self.repair_until[host]), _REPAIRED, host)
        return job >= 0

    def _app_xid(self, job: int, now: float) -> None:
        hosts, slots = self.out.hosts[job], self.out.slots[job]
        host = int(hosts[self.rng.integers(len(hosts))])
        slot = int(slots[self.rng.integers(len(slots))])
        code = int(self.rng.choice(APP_XIDS))
        self.out.xids.append((now, host, slot, code))
        self.out.job_xids.append((job, now, "xid", host, slot, code))

    # -- placement ---------------------------------------------------------------------------

    def _schedule_pass(self, now: float) -> None:
        work = self.work
        free = int(self.eff[self.eff > 0].sum())
        # Smallest single-node size and node count that failed so far: resources only shrink
        # during a pass, so a bigger job cannot fit either. One cache per host set allowed.
        fail_any = [GPUS_PER_HOST + 1, 1 << 30]
        fail_off = [GPUS_PER_HOST + 1, 1 << 30]
        shadow, allowed = math.inf, None
        reserved = False
        keep: list[tuple[int, int, int]] = []
        for position, entry in enumerate(self.pending):
            if free == 0:
                keep.extend(self.pending[position:])
                break
            job = entry[2]
            gpus, nodes = int(work.gpus[job]), int(work.nodes[job])
            multi = gpus > GPUS_PER_HOST
            inside = not reserved or now + float(work.limit_s[job]) <= shadow
            cache = fail_any if inside else fail_off
            if (gpus >= cache[0]) if not multi else (nodes >= cache[1]):
                keep.append(entry)
                continue
            placed = self._place(job, None if inside else allowed)
            if placed:
                self._start(job, now, *placed)
                free -= gpus
                continue
            if multi:
                cache[1] = min(cache[1], nodes)
            else:
                cache[0] = min(cache[0], gpus)
            keep.append(entry)
            if not reserved:
                reserved = True
                shadow, allowed = self._reserve(now, gpus, nodes)
        self.pending = keep

    def _place(self, job: int, allowed: np.ndarray | None) -> tuple[np.ndarray, int] | None:
        gpus = int(self.work.gpus[job])
        if gpus <= GPUS_PER_HOST:
            fits = self.eff >= gpus
            if allowed is not None:
                fits &= allowed
            if not fits.any():
                return None
            return np.array([int(np.argmin(np.where(fits, self.eff, 99)))]), gpus
        whole = self.eff == GPUS_PER_HOST
        if allowed is not None:
            whole &= allowed
        chosen = np.flatnonzero(whole)[: int(self.work.nodes[job])]
        return (chosen, GPUS_PER_HOST) if len(chosen) == self.work.nodes[job] else None

    def _reserve(self, now: float, gpus: int, nodes: int) -> tuple[float, np.ndarray]:
        """When the blocked job could start, and the hosts it would use (all others allowed)."""
        ready = np.maximum(np.maximum(self.busy_until, self.repair_until), now)
        if gpus <= GPUS_PER_HOST:
            ready = np.where(self.eff >= gpus, now, ready)
        needed = max(1, nodes if gpus > GPUS_PER_HOST else 1)
        if needed > len(ready):
            return math.inf, np.ones(len(ready), dtype=bool)
        first = np.argsort(ready, kind="stable")[:needed]
        allowed = np.ones(len(ready), dtype=bool)
        allowed[first] = False
        return float(ready[first[-1]]), allowed

    def _start(self, job: int, now: float, hosts: np.ndarray, per_host: int) -> None:
        out, work = self.out, self.work
        deadline = now + float(work.limit_s[job])
        slots: tuple[int, ...] = ()
        for h in hosts.tolist():
            mask = self.free_mask[h]
            take = [s for s in range(GPUS_PER_HOST) if mask >> s & 1][:per_host]
            for s in take:
                mask &= ~(1 << s)
            self.free_mask[h] = mask
            self.eff[h] = mask.bit_count() if self.usable[h] else -1
            self.slot_job[h, take] = job
            self.host_jobs[h].add(job)
            self.busy_until[h] = max(self.busy_until[h], deadline)
            slots = tuple(take)
        out.start_s[job] = now
        out.hosts[job] = self.host_ids[hosts]
        out.slots[job] = slots
        self._push(now + float(work.run_s[job]), _END, job)

    def _finish(self, job: int, now: float, state: str) -> None:
        out, work = self.out, self.work
        out.end_s[job], out.state[job] = now, state
        local = np.searchsorted(self.host_ids, out.hosts[job])
        for h in local.tolist():
            for s in out.slots[job]:
                self.free_mask[h] |= 1 << s
            self.slot_job[h, list(out.slots[job])] = -1
            self.host_jobs[h].discard(job)
            self.eff[h] = self.free_mask[h].bit_count() if self.usable[h] else -1
            ends = [float(out.start_s[j] + work.limit_s[j]) for j in self.host_jobs[h]]
            self.busy_until[h] = max(ends, default=-np.inf)
