"""Arrow helpers of the AI functions: a column's rows as Python values, fast when all are equal.

A query passes `ai_classify` the same labels and examples on every row (a literal or a scalar
subquery), which DuckDB hands over repeated in each batch; converting 2,048 copies of 200
examples to Python would cost more than classifying. `constant_list` compares the rows inside
Arrow instead and converts one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def combined(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array for a column DuckDB may hand over in chunks."""
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def constant_list(column: pa.Array | pa.ChunkedArray) -> tuple[bool, list[Any] | None]:
    """(True, row 0's list) when every row of a list column is equal, else (False, None).

    >>> constant_list(pa.array([["a", "b"], ["a", "b"]]))
    (True, ['a', 'b'])
    >>> constant_list(pa.array([["a"], ["b"]]))
    (False, None)
    """
    array = combined(column)
    if len(array) == 0:
        return True, None
    if array.null_count:
        return (array.null_count == len(array)), None
    if isinstance(array, pa.FixedSizeListArray):
        return False, None
    offsets = np.asarray(array.offsets)
    sizes = np.diff(offsets)
    if not (sizes == sizes[0]).all():
        return False, None
    first = array[0].values
    size = int(sizes[0])
    values = array.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    if size:
        tiled = first.take(pa.array(np.tile(np.arange(size), len(array))))
        if not _equal(values, tiled):
            return False, None
    return True, first.to_pylist()


def _equal(left: pa.Array, right: pa.Array) -> bool:
    if pa.types.is_struct(left.type):
        return all(
            _equal(left.field(i), right.field(i)) for i in range(left.type.num_fields)
        ) and left.is_valid().equals(right.is_valid())
    same = pc.equal(left, right)
    both_null = pc.and_(left.is_null(), right.is_null())
    return bool(pc.all(pc.or_kleene(pc.fill_null(same, False), both_null)).as_py())
