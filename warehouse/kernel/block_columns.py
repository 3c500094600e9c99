"""The columns of a block: each compressed by pcodec, in whichever of a few forms is fewest bytes.

An int64 column is stored as it is ('q'), or as series runs that repeat ('r'). A float column
is stored by its bits ('d'), as integers × 10^-k ('k'), as those integers' differences along
each series run ('K', counters), or as each run's median and the integers less it ('o'). The
block's layout around them is in `warehouse/kernel/blocks.py`.

The series of one scrape share their timestamps, and the samples of one delivery their batch id,
so most series runs of a block repeat another's timestamps and batch ids: 11,024 runs of a block of
10,000 GPUs at 60 s held 170 distinct timestamp runs. An 'r' column keeps each distinct run once:
its section is three, each a u32 length and its bytes: the distinct run each series run is (uint32),
the distinct runs' lengths (uint32) and their values one after another (int64). Measured on a day
of 10,000 GPUs at 60 s (229M samples), it takes timestamps from 0.040 to 0.003 bytes a sample and
batch ids from 0.063 to 0.004: blocks from 1.024 to 0.929.

An 'o' column is for readings that each GPU holds near its own level (temperatures, clocks,
utilisation, power): stored as they are, pcodec codes every GPU's level again in each sample;
as steps, each sample pays for two readings' noise. Its section is a u32 length, the runs'
medians (int64), then the integers less their run's median (int64). On the same day it took
GPU temperatures from 5.96 to 5.10 MB, utilisation from 7.74 to 6.89 and all blocks from 212.27
to 207.73 MB.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np
from pcodec import ChunkConfig, standalone

#: A section's length, before its bytes.
LEN = struct.Struct("<I")
#: pcodec's default effort; level 8 measured 0.5 % smaller and 2× slower to encode.
_CONFIG = ChunkConfig(compression_level=8)


def pack(array: np.ndarray) -> bytes:
    if not len(array):
        return b""
    return bytes(standalone.simple_compress(np.ascontiguousarray(array), _CONFIG))


def unpack(data: memoryview, dtype: type) -> np.ndarray:
    if not len(data):
        return np.zeros(0, dtype=dtype)
    return np.asarray(standalone.simple_decompress(bytes(data)), dtype=dtype)


def decimal(values: np.ndarray) -> tuple[int, np.ndarray] | None:
    """The fewest decimals k ≤ 6 such that every value is exactly its integer × 10^-k, bit for
    bit (so -0.0, NaN and ±Inf rule it out), and those integers; None if there are none."""
    if not np.isfinite(values).all():
        return None
    for k in range(7):
        scaled = np.round(values * 10.0**k)
        if np.abs(scaled).max(initial=0) >= 2**53:
            return None
        ints = scaled.astype(np.int64)  # as decoding will divide them: -0.0 does not survive
        if np.array_equal((ints / 10.0**k).view(np.uint64), values.view(np.uint64)):
            return k, ints
    return None


def pack_float(values: np.ndarray, starts: np.ndarray) -> tuple[bytes, bytes, int]:
    """A float column in the fewest bytes of: its bits ('d'); integers × 10^-k ('k'); those
    integers' differences along each series run ('K', counters); each run's median and the
    integers less it ('o'); (code, bytes, k)."""
    best = (b"d", pack(values.astype(np.float64, copy=False)), 0)
    found = decimal(values)
    if found is not None and len(values):
        k, ints = found
        steps = np.diff(ints, prepend=np.int64(0))
        steps[starts] = ints[starts]
        offsets = by_median(ints, starts, np.diff(np.append(starts, len(ints))))
        for code, packed in ((b"k", pack(ints)), (b"K", pack(steps)), (b"o", offsets)):
            if len(packed) < len(best[1]):
                best = (code, packed, k)
    return best


def by_median(ints: np.ndarray, starts: np.ndarray, runs: np.ndarray) -> bytes:
    """The 'o' section of decimal integers: the runs' medians, then the integers less them."""
    medians = run_medians(ints, starts, runs)
    bases = pack(medians)
    return LEN.pack(len(bases)) + bases + pack(ints - np.repeat(medians, runs))


#: Sorting (run, value) as one int64 key leaves 40 bits to a value's distance from the least.
_VALUE_BITS = 40


def run_medians(ints: np.ndarray, starts: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Each series run's median (the lower of the middle two), by one sort of (run, value)
    keys: 20 ms for 2^20 samples where a sort per run took 180. Where the values span more than
    2^40, each run's mean rounded."""
    least = int(ints.min())
    if int(ints.max()) - least >= 2**_VALUE_BITS or len(runs) >= 2 ** (63 - _VALUE_BITS):
        sums: np.ndarray = np.add.reduceat(ints.astype(np.float64), starts)
        means: np.ndarray = np.round(sums / runs).astype(np.int64)
        return means
    keys = np.repeat(np.arange(len(runs), dtype=np.int64) << _VALUE_BITS, runs) + (ints - least)
    keys.sort()
    middles: np.ndarray = keys[starts + (runs - 1) // 2] & (2**_VALUE_BITS - 1)
    return middles + least


def unpack_float(code: bytes, data: memoryview, k: int, runs: np.ndarray) -> np.ndarray:
    if code == b"d":
        return unpack(data, np.float64)
    if code == b"o":
        (size,) = LEN.unpack_from(data, 0)
        medians = unpack(data[LEN.size : LEN.size + size], np.int64)
        if len(medians) != len(runs):
            raise ValueError("a block's run medians do not match its series runs")
        offsets = unpack(data[LEN.size + size :], np.int64)
        readings: np.ndarray = (offsets + np.repeat(medians, runs)) / 10.0**k
        return readings
    ints = unpack(data, np.int64)
    if code == b"K":  # the sums along each run; int64 wraps alike both ways, so this is exact
        sums = np.cumsum(ints)
        ends = np.cumsum(runs.astype(np.int64))
        ints = sums - np.repeat(np.r_[np.int64(0), sums[ends[:-1] - 1]], runs)
    return ints / 10.0**k


def pack_int(values: np.ndarray, starts: np.ndarray, runs: np.ndarray) -> tuple[bytes, bytes, int]:
    """An int64 column in the fewer bytes of: as it is ('q'); its distinct series runs once each,
    and which one each run is ('r'); (code, bytes, 0)."""
    plain = pack(values)
    repeated = repeats(values, starts, runs)
    if repeated is not None and len(repeated) < len(plain):
        return b"r", repeated, 0
    return b"q", plain, 0


def repeats(values: np.ndarray, starts: np.ndarray, runs: np.ndarray) -> bytes | None:
    """The 'r' section of an int64 column (see the module's docstring); None when most of its
    series runs are distinct, and it could not be smaller."""
    distinct: dict[bytes, int] = {}
    which = np.empty(len(runs), dtype=np.uint32)
    kept: list[np.ndarray] = []
    for at, (start, run) in enumerate(zip(starts.tolist(), runs.tolist(), strict=True)):
        piece = values[start : start + run]
        found = distinct.setdefault(piece.tobytes(), len(distinct))
        if found == len(kept):
            kept.append(piece)
            if 2 * len(kept) > len(runs) + 1:
                return None
        which[at] = found
    lengths = np.fromiter((len(p) for p in kept), dtype=np.uint32, count=len(kept))
    parts = [pack(which), pack(lengths), pack(np.concatenate(kept) if kept else values[:0])]
    return b"".join(LEN.pack(len(p)) + p for p in parts)


class Runs(NamedTuple):
    """An int64 column by its series runs: the distinct runs one after another (`kept`), their
    lengths, and the distinct run each series run is (`which`). A reader that works run by run
    (the PromQL fast path's search of each step's sample) does its work once per distinct run."""

    which: np.ndarray
    lengths: np.ndarray
    kept: np.ndarray

    @staticmethod
    def each(values: np.ndarray, runs: np.ndarray) -> Runs:
        """`values` with every series run its own."""
        return Runs(np.arange(len(runs), dtype=np.int64), runs.astype(np.int64), values)

    def expand(self) -> np.ndarray:
        """The column as it is: each series run's values, in order."""
        if len(self.which) == len(self.lengths) and np.array_equal(
            self.which, np.arange(len(self.which))
        ):
            return self.kept
        if not len(self.which):
            return self.kept[:0]
        # one gather: each output row's place in `kept` is its position in its series run
        # plus where that run's distinct run starts, in numpy, not run by run
        starts = np.cumsum(self.lengths, dtype=np.int64) - self.lengths
        sizes = self.lengths[self.which]
        shift = starts[self.which] - (np.cumsum(sizes, dtype=np.int64) - sizes)
        at = np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(shift, sizes)
        found: np.ndarray = self.kept[at]
        return found


def unpack_int(code: bytes, data: memoryview, runs: np.ndarray) -> np.ndarray:
    return unpack_runs(code, data, runs).expand()


def unpack_runs(code: bytes, data: memoryview, runs: np.ndarray) -> Runs:
    """An int64 column ('q' or 'r') by its series runs; a 'q' column's runs are each distinct."""
    if code == b"q":
        return Runs.each(unpack(data, np.int64), runs)
    parts, at = [], 0
    for _ in range(3):
        (size,) = LEN.unpack_from(data, at)
        parts.append(data[at + LEN.size : at + LEN.size + size])
        at += LEN.size + size
    which = unpack(parts[0], np.uint32)
    lengths = unpack(parts[1], np.uint32)
    kept = unpack(parts[2], np.int64)
    if len(which) != len(runs) or not np.array_equal(lengths[which], runs):
        raise ValueError("a block's repeated runs do not match its series runs")
    return Runs(which.astype(np.int64), lengths.astype(np.int64), kept)
