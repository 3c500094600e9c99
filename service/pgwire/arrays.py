"""Zero-copy numpy views of Arrow arrays (pyarrow's `to_numpy` copies through a slow path as
soon as an array carries a validity bitmap, even one with no nulls)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def values(arr: pa.Array, dtype: str) -> np.ndarray:
    """The value buffer of a fixed-width array as numpy (slots under NULL hold anything).

    >>> values(pa.array([1, None, 3], pa.int64()), "int64")[[0, 2]].tolist()
    [1, 3]
    """
    width = np.dtype(dtype).itemsize
    return np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * width)


def valid(arr: pa.Array) -> np.ndarray:
    """A boolean numpy mask of the non-NULL slots.

    >>> valid(pa.array([1, None, 3])).tolist()
    [True, False, True]
    """
    bitmap = arr.buffers()[0]
    if bitmap is None or arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + len(arr)].astype(bool)


def lengths(arr: pa.Array) -> np.ndarray:
    """Byte length of each value of a binary/string array, -1 for NULL (int64).

    >>> lengths(pa.array([b"ab", None, b""])).tolist()
    [2, -1, 0]
    """
    offsets = np.frombuffer(
        arr.buffers()[1], dtype=np.int32, count=len(arr) + 1, offset=arr.offset * 4
    )
    sizes = np.diff(offsets).astype(np.int64)
    if arr.null_count:
        sizes[~valid(arr)] = -1
    return sizes
