"""One scrape's body (Prometheus text exposition) as labelled samples, as Prometheus reads it.

The text is parsed by the dcgm reader's parser (`promblock`, vectorised, with `promline` for
the lines it is unsure of). As in Prometheus with `honor_labels: false`, the target's labels
(`job`, `instance`, the file_sd labels) are added to every series and win over a scraped
label of the same name, which is kept as `exported_<name>`; empty label values count as
absent. A sample without a timestamp gets the scrape's. Any line that is not a sample, a
comment or blank fails the whole scrape (Prometheus does the same), naming the line.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from warehouse.errors import UserError
from warehouse.ingest import textblocks
from warehouse.ingest.promblock import BlockParser
from warehouse.ingest.promline import Labels

#: Labels of one series, `__name__` included, sorted: a series' identity within a target.
SeriesKey = tuple[tuple[str, str], ...]


class BadScrape(UserError):
    """A scrape body that is not the text exposition format."""


@dataclass
class Scraped:
    """The samples of one scrape: `series[sid]` are the labels of sample i's `sids[i]`."""

    series: list[SeriesKey]
    sids: np.ndarray  # int64
    timestamps_ms: np.ndarray  # int64
    values: np.ndarray  # float64


def parse(body: bytes, target_labels: Labels, scrape_ms: int) -> Scraped:
    """The samples of `body` with the target's labels added; BadScrape naming the first bad
    line."""
    sets: list[dict[str, str]] = []

    def label_set(pairs: Labels) -> int:
        sets.append(_with_target(pairs, target_labels))
        return len(sets) - 1

    parser = BlockParser(label_set)
    names, set_ids, values, stamps = [], [], [], []
    for block in textblocks.blocks(io.BytesIO(body), max(len(body), 1 << 16)):
        out = parser.parse(block)
        if out.rejects:
            first = out.rejects[0]
            raise BadScrape(f"line {first.line}: {first.reason}")
        names.append(out.names)
        set_ids.append(out.label_sets)
        values.append(out.values)
        stamps.append(np.where(out.stamped, out.timestamps_ms, scrape_ms))
    if not names:
        return Scraped([], *(np.empty(0, t) for t in (np.int64, np.int64, np.float64)))
    name = np.concatenate(names).astype(np.int64)
    pair = name * (len(sets) + 1) + np.concatenate(set_ids)
    distinct, sids = np.unique(pair, return_inverse=True)
    series = [
        tuple(
            sorted(
                {
                    **sets[p % (len(sets) + 1)],
                    "__name__": parser.names[p // (len(sets) + 1)],
                }.items()
            )
        )
        for p in distinct.tolist()
    ]
    return Scraped(
        series,
        sids.astype(np.int64),
        np.concatenate(stamps).astype(np.int64),
        np.concatenate(values).astype(np.float64),
    )


def _with_target(pairs: Labels, target_labels: Labels) -> dict[str, str]:
    given = dict(target_labels)
    out = {name: value for name, value in pairs if value != "" and name not in given}
    for name, value in pairs:
        if name in given and value != "":
            out[f"exported_{name}"] = value
    out.update(given)
    return out
