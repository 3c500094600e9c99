"""The allocator settings `wanka serve` makes so its memory stays bounded (serve/memory.py)."""

from __future__ import annotations

import platform
import time

import pyarrow as pa
import pytest

from service.serve import memory

glibc_only = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="arena and trim controls are glibc's"
)


@glibc_only
def test_arenas_are_limited_and_free_pages_trimmed() -> None:
    assert memory.limit_arenas(memory.ARENAS) is True
    blocks = [bytearray(64 << 10) for _ in range(2000)]  # ~128 MiB from malloc, then freed
    del blocks
    assert isinstance(memory.trim(), bool)


@glibc_only
def test_the_trimmer_runs_until_stopped() -> None:
    trimmer = memory.Trimmer(every_s=0.01).start()
    try:
        deadline = time.monotonic() + 5
        while trimmer.seconds == 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # waiting for the thread's first trim, not timing anything
        assert trimmer.seconds > 0
    finally:
        trimmer.stop()
    assert not trimmer.thread.is_alive()


def test_arrow_buffers_come_from_jemalloc() -> None:
    before = pa.default_memory_pool()
    try:
        if memory.use_jemalloc_for_arrow():
            assert pa.default_memory_pool().backend_name == "jemalloc"
            assert pa.array(range(1000)).nbytes > 0  # and it allocates
        else:
            assert pa.default_memory_pool().backend_name == before.backend_name
    finally:
        pa.set_memory_pool(before)
