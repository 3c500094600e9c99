"""What the PromQL fast path (`warehouse.promql.native`) reads: the selected series and their
groups, the series the window holds, and the window's samples from the blocks and the hot
table, decoded into arrays. Every read goes through `run(sql, params)`, the caller's session.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from warehouse.kernel import blocks
from warehouse.kernel.block_columns import Runs
from warehouse.promql import source
from warehouse.promql.labels import without as without_sql
from warehouse.promql.plan import text
from warehouse.tsdb import cold_scan
from warehouse.tsdb.relations import BLOCKS, HOT, SERIES

#: `warehouse.promql.native.Native` (not imported: native imports this module).
Native = Any

#: Blocks fetched and decoded at a time (their compressed bytes held meanwhile).
BLOCKS_AT_ONCE = 16

Run = Callable[[str, dict[str, Any]], pa.Table]


class Fallback(Exception):
    """The fast path does not answer this query: the SQL route does (`run` may raise it)."""


#: The window's bounds in a statement: the parameters of `window_params`.
_LO, _HI = "make_timestamptz($lo_us)", "make_timestamptz($hi_us)"


def window(native: Native) -> tuple[int, int]:
    """The sample times read, in ms: [lo, hi]."""
    g, shape = native.grid, native.shape
    reach = shape.range_ms if shape.function else native.lookback_ms
    return g.start_ms - shape.offset_ms - reach, g.end_ms - shape.offset_ms


def window_params(native: Native) -> dict[str, Any]:
    lo, hi = window(native)
    return {"lo_us": lo * 1000, "hi_us": hi * 1000}


def series(native: Native, run: Run) -> tuple[pa.Table, list[int]]:
    """The selected series (`sid`, sorted, and `g`, the labels of their group), and the
    blocks of the metric the window's statistics keep (refused, before any is read, when they
    hold more than `cold_scan.BUDGET` samples)."""
    shape = native.shape
    groups = [list(group) for group in shape.groups]
    metric, window = text(shape.metric), f"ts BETWEEN {_LO} AND {_HI}"
    if shape.labels is None:
        group = "'{}'"
    elif shape.without:
        group = f"to_json({without_sql(list(shape.labels), source.GPU_LABELS)})::VARCHAR"
    else:
        names = sorted(set(shape.labels))
        group = "[" + ", ".join(source.gpu_label(n) for n in names) + "]"
    table = run(
        f"SELECT r.series_id AS sid, {group} AS g,\n"
        f"  (SELECT count(*) FROM prom_samples WHERE metric = {metric} AND {window}) AS prom,\n"
        f"  (SELECT count(*) FROM wanka.stale_markers WHERE metric = {metric} AND {window})"
        f" AS marks,\n"
        f"  (SELECT coalesce(sum(samples), 0) {_blocks(native)}) AS held,\n"
        f"  ({_kept(native)}) AS kept\n"
        f"FROM {SERIES} r\n"
        f"WHERE r.metric = {metric} AND ({source._gpu_wanted(groups)})\n"
        f"ORDER BY r.series_id",
        window_params(native),
    )
    if not table.num_rows:
        raise Fallback  # none here; prom_samples may hold some
    prom, marks, held, kept = (table[c][0].as_py() for c in ("prom", "marks", "held", "kept"))
    if prom or marks or held > cold_scan.BUDGET:
        raise Fallback
    return table.select(["sid", "g"]), kept or []


def groups(native: Native, table: pa.Table) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The series' ids, their groups' labels JSON, and each one's group index."""
    shape = native.shape
    sids = table["sid"].to_numpy().astype(np.int64)
    found = table["g"].to_pylist()
    if shape.labels is not None and not shape.without:
        names = sorted(set(shape.labels))
        found = [tuple(vs) for vs in found]  # a label set is written once per group
        texts = {
            vs: _json({n: v for n, v in zip(names, vs, strict=True) if v}) for vs in set(found)
        }
        found = [texts[vs] for vs in found]
    keys, index = np.unique(np.asarray(found, dtype=object), return_inverse=True)
    return sids, [str(k) for k in keys], index.astype(np.int64)


def _blocks(native: Native) -> str:
    """FROM and WHERE of the metric's blocks whose samples may lie in the window."""
    metric = text(native.shape.metric)
    return f"FROM {BLOCKS} WHERE metric = {metric} AND ts_max >= {_LO} AND ts_min <= {_HI}"


def _kept(native: Native) -> str:
    """The SELECT of the ids of those blocks, in order."""
    return f"SELECT list(block_id ORDER BY block_id) {_blocks(native)}"


def kept(native: Native, run: Run) -> list[int]:
    """The ids of the blocks of the metric whose samples may lie in the window, in order."""
    found: list[int] | None = run(_kept(native), window_params(native)).column(0)[0].as_py()
    return found or []


def _json(labels: dict[str, str]) -> str:
    return json.dumps(labels, sort_keys=True, separators=(",", ":"))


def _fetched(
    native: Native, run: Run, ids: list[int], check: Callable[[], None]
) -> Iterator[bytes]:
    """The compressed bytes of the blocks `ids`, in order, `BLOCKS_AT_ONCE` at a time."""
    chosen = (
        f"SELECT data FROM {BLOCKS} WHERE metric = {text(native.shape.metric)} "
        f"AND list_contains($ids, block_id) ORDER BY block_id"
    )
    for at in range(0, len(ids), BLOCKS_AT_ONCE):
        check()
        yield from run(chosen, {"ids": ids[at : at + BLOCKS_AT_ONCE]})["data"].to_pylist()


def present(
    native: Native, run: Run, sids: np.ndarray, ids: list[int], most: int, check: Callable[[], None]
) -> np.ndarray:
    """Which of the selected series `sids` have a run in the blocks `ids` or a hot sample in
    the window; Fallback as soon as the blocks alone hold more than `most` of them.

    A metric whose label sets change with every job (a GPU's series per job it ran) has many
    more series than a window holds: a day of 10,000 GPUs had 66,849 of one metric, and 6
    hours of it 31,768. The cells are sized by those present, found before their groups are
    (a block's series ids are a section of their own, decoded alone)."""
    found = []
    for data in _fetched(native, run, ids, check):
        try:
            found.append(blocks.run_series(data).astype(np.int64))
        except ValueError:
            raise Fallback from None
    if found and int(np.isin(sids, np.concatenate(found)).sum()) > most:
        raise Fallback  # the hot samples can only add to them
    hot = run(
        f"SELECT DISTINCT series_id AS sid FROM {HOT} WHERE ts BETWEEN {_LO} AND {_HI} "
        f"AND series_id IN (SELECT series_id FROM {SERIES} "
        f"WHERE metric = {text(native.shape.metric)}) LIMIT {most + 1}",  # enough to refuse
        window_params(native),
    )
    if hot.num_rows > most:
        raise Fallback
    found.append(hot["sid"].to_numpy().astype(np.int64))
    return np.isin(sids, np.concatenate(found))


def parts(
    native: Native,
    run: Run,
    sids: np.ndarray,
    ids: list[int],
    check: Callable[[], None],
    absent: np.ndarray,
) -> Any:
    """The selected series' samples of the window, block by block, then the hot ones: each
    as (rank of each run's series, run lengths, times in µs by series run, values), runs in
    series order. `absent`: selected series `present` found no sample of; one that has a hot
    sample now came in since, and the SQL route answers."""
    lo = window(native)[0]
    rank_of = np.full(int(max(sids[-1], absent.max(initial=0))) + 2, -1, dtype=np.int64)
    rank_of[sids] = np.arange(len(sids))
    rank_of[absent] = -2
    # decoded here: decoding ahead on threads measured slower (29.8 against 25.5 ms a query)
    for block_ids, runs, ts, values in map(_decoded, _fetched(native, run, ids, check)):
        yield rank_of[np.minimum(block_ids, len(rank_of) - 1)], runs.astype(np.int64), ts, values
    check()
    # the hot samples, and in the same statement (one snapshot) a row of NULLs if the blocks
    # are no longer those listed: moved or cut again since, the answer would miss samples
    hot = run(
        f"SELECT s.series_id AS sid, epoch_us(s.ts) AS ts, s.value AS v FROM {HOT} s\n"
        f"WHERE s.ts BETWEEN {_LO} AND {_HI} AND s.series_id IN (\n"
        f"  SELECT series_id FROM {SERIES} WHERE metric = {text(native.shape.metric)})\n"
        f"UNION ALL SELECT NULL, NULL, NULL\n"
        f"WHERE coalesce(({_kept(native)}), []::BIGINT[]) IS DISTINCT FROM $listed::BIGINT[]",
        {**window_params(native), "listed": list(ids)},
    )
    if hot.num_rows:
        if hot["sid"].null_count or hot["v"].null_count:  # the SQL route reads one snapshot
            raise Fallback
        hid = rank_of[np.minimum(hot["sid"].to_numpy().astype(np.int64), len(rank_of) - 1)]
        if (hid == -2).any():
            raise Fallback
        chosen = hid >= 0  # of the metric's series, those the matchers select
        hid, ts, values = hid[chosen], hot["ts"].to_numpy()[chosen], hot["v"].to_numpy()[chosen]
        if not len(hid):
            return
        since = ts - lo * 1000
        if int(since.max()) < 1 << 42:  # by series, then time: a radix sort of one key
            order = np.argsort((hid << 42) + since, kind="stable")
        else:
            order = np.lexsort((ts, hid))
        hid, ts, values = hid[order], ts[order], values[order]
        starts = np.flatnonzero(np.diff(hid, prepend=-1))
        runs = np.diff(np.append(starts, len(hid)))
        yield hid[starts], runs, Runs.each(ts, runs), values


def _decoded(data: bytes) -> tuple[np.ndarray, np.ndarray, Runs, np.ndarray]:
    try:
        return blocks.decode_samples(data)
    except ValueError:  # a NULL value: the SQL route reads such a block
        raise Fallback from None
