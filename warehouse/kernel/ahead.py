"""Work done a few items ahead, on threads every reader shares: a reader of compressed blocks
decodes the next ones while it works on the one before (pcodec and numpy let go of the GIL)."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

Item = TypeVar("Item")
Done = TypeVar("Done")

_WORKERS = ThreadPoolExecutor(max(2, os.cpu_count() or 2), thread_name_prefix="wanka-decode")


def ahead(
    items: Iterable[Item], work: Callable[[Item], Done], depth: int = 2
) -> Generator[Done, None, None]:
    """`work(item)` of each item, in order, with at most `depth` done ahead of the one taken.
    The items are drawn on the caller's thread; what `work` raises comes out where its result
    would; the work not taken is cancelled when the caller stops early."""
    pending: deque[Future[Done]] = deque()
    try:
        for item in items:
            pending.append(_WORKERS.submit(work, item))
            if len(pending) > depth:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for waiting in pending:
            waiting.cancel()
