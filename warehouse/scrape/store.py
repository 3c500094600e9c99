"""A scrape round stored as one batch: its samples through the store's append (a sample
already stored is not stored again), wanka.scrape_targets replaced and node_risk's evidence
of its GPU events added, in one transaction."""

from __future__ import annotations

import duckdb

from warehouse.faults import signals
from warehouse.scrape.scraper import Health, Round
from warehouse.tsdb.append import Appended, append


def store_round(cur: duckdb.DuckDBPyConnection, done: Round) -> Appended:
    """Store `done`; what was new."""

    def health(cur: duckdb.DuckDBPyConnection, batch_id: int) -> None:
        cur.execute("DELETE FROM wanka.scrape_targets")
        if done.health:
            cur.executemany(
                "INSERT INTO wanka.scrape_targets VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [_row(h, batch_id) for h in done.health],
            )
        signals.after_telemetry(cur, batch_id)  # what node_risk learns from the round's events

    return append(cur, done.rows, then=health)


def _row(h: Health, batch_id: int) -> list[object]:
    state = "up" if h.up else "down"
    return [h.target, h.labels, state, h.at, h.duration_s, h.samples, h.error, batch_id]
