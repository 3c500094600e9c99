"""nccl-tests probes: the bus bandwidth a fleet-wide all_reduce_perf sweep measures, as rows of
`nccl_results`.

Operators find a bad NIC, cable or transceiver the way Microsoft's SuperBench does: run the
same small collective on every host, again and again, and compare each result with the fleet's
own figure for the same hardware rather than with a datasheet. Here every `every_s` seconds a
sweep puts the hosts of each cluster that are not down in a random ring, and each host runs a
2-node all_reduce_perf (16 ranks) with its successor: every host takes part in two runs with two
different partners, so a run that is slow because of one host can be told from one that is slow
because of the other (`sql/health/nccl_findings.sql`).

One run measures 64 MiB, 256 MiB, 1 GiB and 4 GiB, out-of-place and in-place, as nccl-tests
prints them. NCCL spreads a 2-node all_reduce over one ring per NIC, so its bus bandwidth
approaches the host's network bandwidth: NICs × per-NIC rate, each NIC capped by its PCIe slot
(`PCIE_X16_GBS`, ~90 % of it usable), and by the NVLink hops the rings make inside the host
(7 of a GPU's 8 steps). A run goes at its slower host's rate, times an efficiency that rises
with the message size, times a little run-to-run noise; a bad NIC scales down every run that
touches its host from its onset on. algbw and time follow from busbw as nccl-tests derives it
(busbw = algbw × 2(n−1)/n, `busbw_factor`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, timedelta

import numpy as np
import pyarrow as pa

from warehouse.simulate.config import GPUS_PER_HOST, SimConfig
from warehouse.simulate.inventory import Inventory
from warehouse.simulate.metrics import PCIE_X16_GBS
from warehouse.simulate.tables import timestamps, to_table

#: Message sizes of one probe run, bytes (all_reduce_perf -b 64M -e 4G -f 4).
SIZES = np.array([64 * 2**20, 256 * 2**20, 2**30, 4 * 2**30], dtype=np.int64)
#: Share of the link rate a 2-node all_reduce reaches at each size (protocol and pipeline
#: overheads weigh less on larger messages).
EFFICIENCY = np.array([0.80, 0.845, 0.89, 0.93])
PLACEMENTS = ("out-of-place", "in-place")
RANKS = 2 * GPUS_PER_HOST
#: nccl-tests' all_reduce bus-bandwidth factor 2(n−1)/n (the `busbw_factor` UDF).
BUSBW_FACTOR = 2 * (RANKS - 1) / RANKS
#: Share of a PCIe x16 slot's bandwidth a NIC gets out of it.
PCIE_USABLE = 0.9
RUN_SD = 0.015  # lognormal sd of a run's rate against the next run's (clocks, congestion)
ROW_SD = 0.004  # and of one size and placement against another within the run
BYTES_PER_FLOAT = 4


def probe_results(
    cfg: SimConfig,
    inv: Inventory,
    bad_nics: Sequence[tuple[int, float, float]],
    rng: np.random.Generator,
    every_s: float = 900.0,
) -> pa.Table:
    """The results of a probe sweep every `every_s` seconds of the window, shaped like
    `nccl_results` (`batch_id` null, as the other simulated tables): per run (sweep by
    sweep) 4 sizes × 2 placements.

    Args:
        cfg: the simulation; sweeps run at cfg.start + k·every_s inside the window.
        inv: the hosts; those whose state is 'down' take no part.
        bad_nics: (host index, onset in seconds after cfg.start, factor): the runs touching
            the host at or after the onset go at `factor` (0.6 = 40 % slower) of their rate;
            a run of two bad hosts at the lower factor.
        rng: every draw (ring orders, noise) comes from it.
        every_s: seconds between two sweeps, at least 1.

    Raises:
        ValueError: for a sweep interval under a second or a bad NIC that names no host or
            has a factor outside (0, 1].
    """
    if not (math.isfinite(every_s) and every_s >= 1.0):
        raise ValueError(f"every_s must be at least 1 second, got {every_s}")
    _check_bad_nics(inv, bad_nics)
    times = every_s * np.arange(math.ceil(cfg.window_s / every_s - 1e-9))
    sweep, host, partner = _rings(inv, len(times), rng)
    at = times[sweep]
    link = host_link_gbs(inv)
    rate = np.minimum(link[host], link[partner])  # a run goes at its slower host's rate
    rate *= _nic_factor(bad_nics, at, host, partner) * rng.lognormal(0.0, RUN_SD, len(at))
    shape = (len(at), len(SIZES), len(PLACEMENTS))
    busbw = rate[:, None, None] * EFFICIENCY[None, :, None] * rng.lognormal(0.0, ROW_SD, shape)
    return _table(cfg, inv, at, host, partner, busbw.ravel())


def host_link_gbs(inv: Inventory) -> np.ndarray:
    """Per host, the bus bandwidth a 2-node all_reduce could reach on it, GB/s.

    The host's NICs together (each capped by its PCIe slot), or the NVLink the rings cross
    inside the host (7 hops of a GPU's 8 per direction), whichever is lower.
    """
    plans = [inv.plans[c] for c in inv.host_cluster]
    nic = np.array([p.nic_gbps / 8 for p in plans])
    slot = PCIE_USABLE * np.array([PCIE_X16_GBS[int(g)] for g in inv.pcie_gen])
    network = np.array([p.nic_count for p in plans]) * np.minimum(nic, slot)
    scaleup = np.array([inv.specs[p.model].scaleup_gbs for p in plans])
    nvlink = np.where(scaleup > 0, scaleup / 2 * GPUS_PER_HOST / (GPUS_PER_HOST - 1), np.inf)
    link: np.ndarray = np.minimum(network, nvlink)
    return link


def _check_bad_nics(inv: Inventory, bad_nics: Sequence[tuple[int, float, float]]) -> None:
    for host, _onset, factor in bad_nics:
        if not 0 <= host < len(inv.host_names):
            raise ValueError(
                f"bad NIC host {host} is not a host index (0..{len(inv.host_names) - 1})"
            )
        if not 0 < factor <= 1:
            raise ValueError(f"bad NIC factor must be in (0, 1], got {factor}")


def _rings(
    inv: Inventory, sweeps: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sweep, host, partner) of every run, in sweep order: per sweep and cluster a random ring
    of the hosts that are up, each host paired with its successor (two hosts: one run)."""
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    running = inv.host_state != "down"
    for cluster in range(len(inv.plans)):
        members = np.flatnonzero((inv.host_cluster == cluster) & running)
        if len(members) < 2:
            continue
        ring = members[np.argsort(rng.random((sweeps, len(members))), axis=1)]
        runs = len(members) if len(members) > 2 else 1
        following = np.roll(ring, -1, axis=1)
        sweep = np.repeat(np.arange(sweeps), runs)
        parts.append((sweep, ring[:, :runs].ravel(), following[:, :runs].ravel()))
    if not parts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    sweep, host, partner = (np.concatenate(column) for column in zip(*parts, strict=True))
    order = np.argsort(sweep, kind="stable")
    return sweep[order], host[order], partner[order]


def _nic_factor(
    bad_nics: Sequence[tuple[int, float, float]],
    at: np.ndarray,
    host: np.ndarray,
    partner: np.ndarray,
) -> np.ndarray:
    """Per run, the factor of the worst bad NIC it touches (1 where none)."""
    factor = np.ones(len(at))
    for bad, onset, slower in bad_nics:
        hit = ((host == bad) | (partner == bad)) & (at >= onset)
        factor[hit] = np.minimum(factor[hit], slower)
    return factor


def printed_time_us(us: np.ndarray) -> np.ndarray:
    """Times rounded as nccl-tests prints them: 2 decimals under 100 µs, 1 under 10 ms, else 0.

    >>> printed_time_us(np.array([12.3456, 394.567, 47535.4])).tolist()
    [12.35, 394.6, 47535.0]
    """
    return np.where(us < 100, us.round(2), np.where(us < 10_000, us.round(1), us.round(0)))


def _table(
    cfg: SimConfig,
    inv: Inventory,
    at: np.ndarray,
    host: np.ndarray,
    partner: np.ndarray,
    busbw: np.ndarray,
) -> pa.Table:
    """The rows: per run, per size, out-of-place then in-place, as the reader stores them."""
    per_run = len(SIZES) * len(PLACEMENTS)
    rows = len(at) * per_run
    of_run = np.repeat(np.arange(len(at)), per_run)
    size = np.tile(np.repeat(SIZES, len(PLACEMENTS)), len(at))
    # nccl-tests measures the time and derives the bandwidths from it, each printed rounded.
    time_us = printed_time_us(size * BUSBW_FACTOR / busbw / 1e3)
    algbw = size / time_us / 1e3
    names = np.array(inv.host_names, dtype=object)
    pairs = np.stack([names[host], names[partner]], axis=1).ravel()
    hosts = pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * len(at) + 1, 2, dtype=np.int32)),
                                     pa.array(pairs, type=pa.string()))  # fmt: skip
    models = np.array([p.model for p in inv.plans], dtype=object)[inv.host_cluster[host]]
    return to_table("nccl_results", {
        "run_id": pa.array(_run_ids(cfg, at, names[host], names[partner])).take(of_run),
        "collective": _constant("all_reduce", rows),
        "ranks": np.full(rows, RANKS, dtype=np.int32),
        "hosts": hosts.take(of_run),
        "gpu_model": pa.array(models, type=pa.string()).take(of_run),
        "size_bytes": size,
        "count": size // BYTES_PER_FLOAT,
        "dtype": _constant("float", rows),
        "redop": _constant("sum", rows),
        # root -1 (no root) is stored NULL, as warehouse/ingest/nccl.py reads it
        "placement": pa.array(PLACEMENTS).take(np.tile(np.arange(len(PLACEMENTS)), rows // 2)),
        "time_us": time_us,
        "algbw_gbs": algbw.round(2),
        "busbw_gbs": (algbw * BUSBW_FACTOR).round(2),
        "wrong": np.zeros(rows, dtype=np.int64),
        "ran_at": timestamps(cfg.start_us, at).take(of_run),
    }, rows=rows)  # fmt: skip


def _run_ids(cfg: SimConfig, at: np.ndarray, host: np.ndarray, partner: np.ndarray) -> list[str]:
    """'probe-<sweep time>-<host>-<partner>', the time in ISO 8601 to the second, UTC."""
    stamps = {t: (cfg.start + timedelta(seconds=t)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
              for t in np.unique(at).tolist()}  # fmt: skip
    return [
        f"probe-{stamps[t]}-{h}-{p}" for t, h, p in zip(at.tolist(), host, partner, strict=True)
    ]


def _constant(value: str, rows: int) -> pa.Array:
    return pa.array([value]).take(np.zeros(rows, dtype=np.int32))
