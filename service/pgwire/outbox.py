"""What a connection writes, sent in as few socket writes as the protocol allows.

Each `transport.write` on an idle socket is a `send` system call; a simple query answers with
four messages (RowDescription, DataRow, CommandComplete, ReadyForQuery) and the extended protocol
with one or two per message. PostgreSQL's backend combines them "into the minimum possible
number of packets" (protocol docs, Flush): output waits for Sync, Flush, the end of a simple
query or a full buffer. The outbox does the same: `write` collects, `drain` sends what was
collected in one write and waits for the socket as StreamWriter.drain does. Large buffers (a
result batch) go out at once, without being copied into the collection.
"""

from __future__ import annotations

import asyncio
from typing import Any

#: Collected bytes past this are sent without waiting for the next drain.
FLUSH_BYTES = 1 << 16


class Outbox:
    """A StreamWriter's write/drain that collects small writes until `drain`."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self._parts: list[bytes | memoryview] = []
        self._size = 0

    def write(self, data: bytes | memoryview) -> None:
        if len(data) >= FLUSH_BYTES:
            self.flush()
            self.writer.write(data)
            return
        self._parts.append(data)
        self._size += len(data)
        if self._size >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Hand what was collected to the transport, in one write."""
        if self._parts:
            parts, self._parts, self._size = self._parts, [], 0
            self.writer.write(parts[0] if len(parts) == 1 else b"".join(parts))

    async def drain(self) -> None:
        self.flush()
        await self.writer.drain()

    def __getattr__(self, name: str) -> Any:  # get_extra_info, close, transport, ...
        return getattr(self.writer, name)
