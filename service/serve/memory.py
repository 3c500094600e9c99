"""Keeping a long-running server's memory bounded where the C allocators would let it creep.

DuckDB's Python wheel allocates with glibc malloc (no jemalloc here), as do Python's larger
objects; pyarrow's buffers come from mimalloc by default. Under `wanka serve`'s many threads (one
per pgwire connection, HTTP workers, the scheduler) RSS rose ~2.7 MiB a second under load
(272 → 1,087 MiB in 300 s) while DuckDB's buffer manager held under 70 MiB and Python's objects
stayed flat: memory freed but kept by the allocators (bench/bench_load.py prints all three).
What bounds it, measured side by side in 90 s runs of bench_load:
- fewer glibc arenas (`mallopt(M_ARENA_MAX)`, what MALLOC_ARENA_MAX sets) before threads start,
  and `malloc_trim(0)` every few seconds, which hands free pages inside every arena back to the
  OS (both no-ops off glibc): growth slowed but went on (RSS 492 → 573 MiB from 10 s to 90 s);
- Arrow buffers from jemalloc instead of mimalloc, whose per-thread heaps keep what each of the
  many threads freed: with the two above, RSS levelled off (454 → 485 MiB).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
import time

import pyarrow as pa

log = logging.getLogger("wanka.memory")
M_ARENA_MAX = -8  # glibc's mallopt parameter number
ARENAS = 4
TRIM_EVERY_S = 5.0


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


def limit_arenas(arenas: int = ARENAS) -> bool:
    """At most `arenas` malloc arenas from now on; False where the C library is not glibc."""
    return _LIBC is not None and bool(_LIBC.mallopt(M_ARENA_MAX, arenas))


def trim() -> bool:
    """Give free pages held by malloc back to the OS; True if any were."""
    return _LIBC is not None and bool(_LIBC.malloc_trim(0))


def use_jemalloc_for_arrow() -> bool:
    """Arrow's default pool from now on is jemalloc, where this pyarrow build has it."""
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except (NotImplementedError, pa.ArrowException):
        log.info("pyarrow has no jemalloc here: Arrow keeps its default pool")
        return False
    return True


class Trimmer:
    """A daemon thread calling `trim()` every `every_s` seconds until `stop()`."""

    def __init__(self, every_s: float = TRIM_EVERY_S) -> None:
        self.every_s = every_s
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="wanka-trim", daemon=True)
        self.seconds = 0.0  # time spent trimming, for the curious

    def start(self) -> Trimmer:
        if _LIBC is not None:
            self.thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            started = time.perf_counter()
            trim()
            self.seconds += time.perf_counter() - started

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
