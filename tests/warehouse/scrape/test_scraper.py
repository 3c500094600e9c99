"""Scrape rounds against local dcgm-exporter endpoints: a good one, a slow one, one answering
500 and one answering garbage; health, data, staleness and labels as Prometheus would have them."""

from __future__ import annotations

import math
from collections.abc import Iterator

import duckdb
import pytest

from tests.exporter import FIELDS, Exporter
from tests.warehouses import Warehouses
from warehouse.ingest.models import ModelNames
from warehouse.scrape.exposition import BadScrape, parse
from warehouse.scrape.scraper import Scraper
from warehouse.scrape.store import store_round
from warehouse.scrape.targets import Target
from warehouse.scrape.targets import parse as targets_of


@pytest.fixture
def cur(warehouses: Warehouses) -> Iterator[duckdb.DuckDBPyConnection]:
    with warehouses.engine() as engine:
        cursor = engine.cursor()
        yield cursor
        cursor.close()


def scraper(cur: duckdb.DuckDBPyConnection, timeout_s: float = 1.0) -> Scraper:
    rows = cur.execute(
        "SELECT full_name, model FROM gpu_models WHERE full_name IS NOT NULL"
    ).fetchall()
    return Scraper(ModelNames(dict(rows)), timeout_s=timeout_s)


def one(cur: duckdb.DuckDBPyConnection, sql: str) -> object:
    return cur.execute(sql).fetchall()[0][0]


def test_health_and_data_of_good_slow_failing_and_garbage_targets(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    with (
        Exporter("node001") as good,
        Exporter("node002", mode="slow", delay_s=3) as slow,
        Exporter("node003", mode="error") as failing,
        Exporter("node004", mode="garbage") as garbage,
    ):
        exporters = (good, slow, failing, garbage)
        targets = targets_of(
            [{"targets": [e.target for e in exporters], "labels": {"cluster": "c1"}}], "test"
        )
        done = scraper(cur).round(targets)
        stored = store_round(cur, done)
    health = {h.target: h for h in done.health}
    assert [health[t.url].up for t in targets] == [True, False, False, False]
    assert (
        health[targets[0].url].samples == len(FIELDS) * 4 and health[targets[0].url].error is None
    )
    assert "timed out after 1 s" in str(health[targets[1].url].error)
    assert health[targets[1].url].duration_s < 2.5  # the slow one did not hold the round up
    assert "HTTP 500" in str(health[targets[2].url].error)
    assert "line 1" in str(health[targets[3].url].error)
    rows = cur.execute(
        "SELECT health, samples, error IS NULL, batch_id FROM wanka.scrape_targets ORDER BY target"
    ).fetchall()
    assert sorted(r[0] for r in rows) == ["down", "down", "down", "up"]
    assert {r[3] for r in rows} == {stored.batch_id}  # one round, one batch
    # the good target's samples, with Prometheus's target labels
    assert stored.gpu == len(FIELDS) * 4
    assert one(cur, "SELECT count(DISTINCT batch_id) FROM gpu_metrics") == 1
    labels = one(cur, "SELECT labels FROM gpu_metrics WHERE gpu = 0 LIMIT 1")
    assert f'"instance":"{good.target}"' in str(labels) and '"job":"dcgm"' in str(labels)
    assert '"cluster":"c1"' in str(labels)
    # up / scrape_duration_seconds / scrape_samples_scraped for every target
    ups = dict(
        cur.execute(
            "SELECT labels->>'instance', value FROM prom_samples WHERE metric = 'up'"
        ).fetchall()
    )
    assert ups == {good.target: 1.0, slow.target: 0.0, failing.target: 0.0, garbage.target: 0.0}
    assert stored.other == 3 * 4


def test_vanished_series_and_a_failed_target_get_staleness_markers(
    cur: duckdb.DuckDBPyConnection,
) -> None:
    with Exporter("node001", gpus=2, drop_gpu_after=1) as exporter:
        [target] = targets_of([{"targets": [exporter.target]}], "test")
        scrape = scraper(cur)
        store_round(cur, scrape.round([target]))
        second = store_round(cur, scrape.round([target]))  # GPU 1 is gone
        assert second.stale == len(FIELDS)
        exporter.mode = "error"
        third = store_round(cur, scrape.round([target]))  # every series of the target ends
        assert third.stale == len(FIELDS)  # GPU 0's fields end; `up` goes on, as 0
        assert third.other == 3
    assert one(cur, "SELECT count(*) FROM gpu_metrics WHERE isnan(value)") == 0
    assert one(cur, "SELECT count(*) FROM wanka.stale_markers WHERE labels->>'gpu' = '1'") == 5


def test_target_labels_win_and_scraped_ones_are_kept_as_exported() -> None:
    body = b'x{job="theirs",instance="i",gpu="0",a=""} 1\ny 2 1700000000000\n'
    target = Target("http://h:1/metrics", (("instance", "h:1"), ("job", "dcgm")))
    got = parse(body, target.labels, 1_800_000_000_000)
    assert sorted(got.series) == [
        (
            ("__name__", "x"), ("exported_instance", "i"), ("exported_job", "theirs"),
            ("gpu", "0"), ("instance", "h:1"), ("job", "dcgm"),
        ),
        (("__name__", "y"), ("instance", "h:1"), ("job", "dcgm")),
    ]  # fmt: skip
    by_name = {
        dict(got.series[s])["__name__"]: int(t)
        for s, t in zip(got.sids, got.timestamps_ms, strict=True)
    }
    assert by_name == {"x": 1_800_000_000_000, "y": 1_700_000_000_000}  # honour a timestamp
    with pytest.raises(BadScrape, match="line 2"):
        parse(b"ok 1\nnot a sample line at all\n", (), 0)
    assert math.isnan(parse(b"z NaN\n", (), 0).values[0])
