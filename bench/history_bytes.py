"""bench_history's bytes: what each part of the warehouse takes on disk (raw samples hot and in
blocks, each tier hot and in blocks, the series dictionary), and a year's disk on paper from
those bytes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from warehouse.kernel.engine import Engine
from warehouse.tsdb import tiers

STORED = ("gpu_samples", "gpu_blocks", "gpu_tier_1m", "gpu_tier_1h", "tier_blocks", "gpu_series")


def table_bytes(engine: Engine) -> tuple[dict[str, int], int]:
    """Bytes on disk of each of `STORED` after CHECKPOINT, and of the whole file's used blocks.

    A table's bytes are its distinct persistent blocks in DuckDB's `pragma_storage_info` — each
    segment's `block_id` and its `additional_block_ids` (where a BLOB longer than a block goes
    on) — times the block size; the file's are `pragma_database_size()`'s used blocks. A block
    shared by two small segments counts for each: a table of a few blocks is overstated."""
    [(size, used)] = engine.con.execute(
        "SELECT block_size, used_blocks FROM pragma_database_size() "
        "WHERE database_name = current_database()"
    ).fetchall()
    found = {}
    for name in STORED:
        [(blocks,)] = engine.con.execute(
            "SELECT count(DISTINCT b) FROM (SELECT unnest(list_prepend(block_id, "
            f"additional_block_ids)) AS b FROM pragma_storage_info('wanka.\"{name}\"') "
            "WHERE persistent AND block_id >= 0)"
        ).fetchall()
        found[name] = int(blocks) * int(size)
    return found, int(used) * int(size)


@dataclass(frozen=True)
class Part:
    """One part of the store: what it holds, its rows (hot + in blocks) and bytes on disk."""

    name: str
    hot_rows: int
    cold_rows: int
    hot_bytes: int
    cold_bytes: int

    @property
    def per_row(self) -> float:
        return (self.hot_bytes + self.cold_bytes) / max(self.hot_rows + self.cold_rows, 1)


def parts(engine: Engine) -> tuple[list[Part], int]:
    """The raw samples, each tier and the series dictionary, hot and cold; the file's bytes.

    wanka.tier_blocks holds both tiers' blocks: its bytes are split between them by their share
    of its BLOB bytes (octet_length of `data`; the other columns are a few dozen bytes a block)."""
    sizes, used = table_bytes(engine)

    def one(sql: str) -> int:
        [(n,)] = engine.con.execute(sql).fetchall()
        return int(n or 0)

    blob = {
        tier: one(f"SELECT sum(octet_length(data)) FROM wanka.tier_blocks WHERE tier = '{tier}'")
        for tier in tiers.TIERS
    }
    found = [
        Part(
            "raw samples (wanka.gpu_samples + gpu_blocks)",
            one("SELECT count(*) FROM wanka.gpu_samples"),
            one("SELECT sum(samples) FROM wanka.gpu_blocks"),
            sizes["gpu_samples"],
            sizes["gpu_blocks"],
        )
    ]
    for tier, width in tiers.TIERS.items():
        share = blob[tier] / max(sum(blob.values()), 1)
        found.append(
            Part(
                f"{width} tier ({tier} + its tier_blocks)",
                one(f"SELECT count(*) FROM {tier}"),
                one(f"SELECT sum(rows) FROM wanka.tier_blocks WHERE tier = '{tier}'"),
                sizes[tier.split(".")[1]],
                round(sizes["tier_blocks"] * share),
            )
        )
    found.append(
        Part(
            "series dictionary (wanka.gpu_series)",
            one("SELECT count(*) FROM wanka.gpu_series"),
            0,
            sizes["gpu_series"],
            0,
        )
    )
    return found, used


#: One year of DCGM telemetry, on paper: 16 fields a GPU, scraped every 15 s.
YEAR = timedelta(days=365)
FIELDS, SCRAPE_S = 16, 15


def estimate(found: list[Part], gpus: tuple[int, ...] = (10_000, 100_000)) -> list[str]:
    """A year's disk for each of `gpus`, from the measured bytes per sample and per tier row,
    with the shipped defaults: no retention rule (a fresh warehouse has none: wanka.retention
    is empty until one is set, so raw samples are kept), and both tiers kept (retention applies
    to gpu_metrics only). A 14-day raw rule is shown beside for comparison."""
    raw, minute, hour, series = (p.per_row for p in found)
    seconds = YEAR.total_seconds()
    rows = {  # rows a year per GPU
        "raw samples": (FIELDS * seconds / SCRAPE_S, raw),
        "1-minute tier": (FIELDS * seconds / 60, minute),
        "1-hour tier": (FIELDS * seconds / 3600, hour),
        "series dictionary (no churn)": (FIELDS, series),
    }
    lines = [
        "| part | B per row (measured) | rows a year per GPU | "
        + " | ".join(f"{n:,} GPUs" for n in gpus)
        + " |",
        "|---|---:|---:|" + "---:|" * len(gpus),
    ]
    total = dict.fromkeys(gpus, 0.0)
    for name, (n, per) in rows.items():
        cells = []
        for g in gpus:
            total[g] += n * per * g
            cells.append(_size(n * per * g))
        lines.append(f"| {name} | {per:.2f} | {n:,.0f} | " + " | ".join(cells) + " |")
    lines.append(
        "| **a year, shipped defaults** (raw kept, both tiers kept) | | | "
        + " | ".join(f"**{_size(total[g])}**" for g in gpus)
        + " |"
    )
    keep = timedelta(days=14).total_seconds() / seconds
    lines.append(
        "| a year with `retention = '14 days'` on raw (tiers kept) | | | "
        + " | ".join(_size(total[g] - rows["raw samples"][0] * raw * g * (1 - keep)) for g in gpus)
        + " |"
    )
    return lines


def _size(n: float) -> str:
    return f"{n / 1e12:,.1f} TB" if n >= 1e12 else f"{n / 1e9:,.1f} GB"
