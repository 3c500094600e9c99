"""Turning what a person names — files, folders, `-` — into sources, and opening them."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, BinaryIO

from warehouse.errors import UserError
from warehouse.ingest.base import Source

_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF_BYTES = 8192


def collect(paths: list[str], *, stdin: BinaryIO | None = None) -> list[Source]:
    """Expand files, folders (recursively, in name order, hidden files skipped) and `-`."""
    sources: list[Source] = []
    for given in paths:
        if given == "-":
            sources.append(spool(stdin or sys.stdin.buffer, "-"))
            continue
        path = Path(given)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            if not found:
                raise UserError(f"{path}: folder holds no files to ingest")
            sources.extend(_file(p) for p in found)
        elif path.is_file():
            sources.append(_file(path))
        elif path.exists():
            raise UserError(f"{path}: not a regular file or folder")
        else:
            raise UserError(f"{path}: no such file or folder")
    return sources


def _file(path: Path) -> Source:
    mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return Source(str(path), path, mtime)


def spool(stream: IO[bytes], name: str) -> Source:
    """Copy a stream to a temporary file so it can be hashed and then read (bounded memory)."""
    handle = tempfile.NamedTemporaryFile(prefix="wanka-ingest-", delete=False)  # noqa: SIM115
    with handle:
        shutil.copyfileobj(stream, handle, 1 << 20)
    return Source(name, Path(handle.name), datetime.now(UTC), spooled=True)


def release(source: Source) -> None:
    """Remove a spooled copy; leave the person's own files alone."""
    if source.spooled:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(source.path)


def sha256(path: Path) -> str:
    """The content hash that makes a second ingest of the same bytes a no-op."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class HashedStream:
    """A stream plus the `HashingReader` under it, if any."""

    def __init__(self, stream: IO[bytes], hashed: HashingReader | None) -> None:
        self.stream = stream
        self.hashed = hashed


class HashingReader(io.RawIOBase):
    """A file read front to back, hashing every byte on the way (one pass instead of two)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        if n:
            self.digest.update(memoryview(buffer)[:n])
        return n or 0

    def hexdigest(self) -> str:
        """The hash of the whole file: what the reader left unread is read (and hashed) now."""
        while self.read(1 << 20):
            pass
        return self.digest.hexdigest()


@contextmanager
def open_text_source(
    source: Source, expected: str, *, binary: bool = False, hashing: bool = False
) -> Iterator[HashedStream]:
    """Open a source for reading, gunzipping it when it is gzip; refuse binary where text is due.

    With `hashing`, a plain (not gzip) file is read through a `HashingReader`, which the
    caller finds as the stream's `hashed` attribute; otherwise that attribute is None.
    """
    try:
        raw = source.path.open("rb")
    except OSError as error:
        raise UserError(f"{source.name}: cannot read it ({error.strerror})") from None
    with raw:
        head = raw.read(_SNIFF_BYTES)
        raw.seek(0)
        gzipped = head.startswith(_GZIP_MAGIC)
        stream: IO[bytes] = gzip.open(raw) if gzipped else raw  # type: ignore[assignment]  # noqa: SIM115
        if not binary:
            try:
                sample = stream.read(_SNIFF_BYTES) if stream is not raw else head
                if stream is not raw:
                    stream.seek(0)
            except (OSError, EOFError) as error:
                raise UserError(f"{source.name}: broken gzip data ({error})") from None
            if b"\x00" in sample:
                raise UserError(f"{source.name}: binary data, expected {expected}")
        hashed = None
        if hashing and not gzipped and not binary:
            hashed = HashingReader(raw)
            stream = io.BufferedReader(hashed, 1 << 20)
        yield HashedStream(stream, hashed)
