"""Which rows of an Arrow batch of telemetry share a label set, found in Arrow, not in SQL.

A batch of samples holds few label sets for many rows (a scrape repeats every GPU's set once
per field, and every scrape repeats them all), and a label set's text can be long: a real
dcgm-exporter series keeps `instance`, `job`, `device`, `modelName`, `pci_bus_id`, the driver
and the job labels in `labels`. Matching every row's text against the series dictionary in
SQL hashes those strings once per row; here each label column becomes integer codes (the
dictionary indices a reader already made, or a hash encoding), the codes combine into one key
per row, and the keys are encoded once more, so the SQL meets each label set once
(`warehouse.tsdb.write`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Keys stay below this: a wider product of column codes is first made dense again.
_KEY_LIMIT = 1 << 62


def series_codes(data: pa.Table, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per row the code of its label set (`names`' values), and for code k the first row
    holding it: codes count 0, 1, ... in order of first appearance.

    >>> t = pa.table({"m": ["a", "a", "b", "a"], "g": [0, 1, 0, 0]})
    >>> codes, first = series_codes(t, ["m", "g"])
    >>> codes.tolist(), first.tolist()
    ([0, 1, 2, 0], [0, 1, 2])
    """
    key = np.zeros(data.num_rows, dtype=np.int64)
    span = 1
    for name in names:
        codes, size = _column_codes(data[name])
        if span * size >= _KEY_LIMIT:
            key, span = _dense(key)
        key *= size
        key += codes
        span *= size
    codes, _ = _dense(key)
    return codes, _first_rows(codes)


def _column_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """A column's values as codes 1..n (0: null) and n + 1. Equal values may get different
    codes (a dictionary can repeat a value): the SQL then merges them into one series."""
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_dictionary(array.type):
        array = pc.dictionary_encode(array)
    indices = np.asarray(pc.fill_null(array.indices, -1), dtype=np.int64)
    return indices + 1, len(array.dictionary) + 1


def _dense(key: np.ndarray) -> tuple[np.ndarray, int]:
    """`key` renumbered 0..n-1 in order of first appearance (a hash encoding), and n."""
    encoded = pc.dictionary_encode(pa.array(key))
    return np.asarray(encoded.indices, dtype=np.int64), len(encoded.dictionary)


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """The first row of each code, codes numbered in order of first appearance: where the
    running maximum grows. Checked, and found by a hash aggregate should the order differ."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    grows = np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1) > 0)
    if len(grows) == codes.max() + 1 and np.array_equal(codes[grows], np.arange(len(grows))):
        return grows
    rows = pa.table({"c": codes, "i": np.arange(len(codes))})
    firsts = rows.group_by("c", use_threads=False).aggregate([("i", "min")]).sort_by("c")
    return np.asarray(firsts["i_min"], dtype=np.int64)
