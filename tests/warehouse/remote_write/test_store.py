"""Remote-write rows stored once: retries, regroupings and duplicates store nothing twice."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.remote_write.support import STALE, body, dcgm_labels, scrape
from tests.warehouses import Warehouses
from warehouse.ingest.batch import read_context
from warehouse.ingest.models import ModelNames
from warehouse.kernel.engine import Engine
from warehouse.remote_write import labels as mapping
from warehouse.remote_write.decode import decode, merge
from warehouse.remote_write.rows import BadRequest, Limits, SeriesCache
from warehouse.tsdb.append import append

NOW = int(time.time() * 1000)
METRICS = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"]


@pytest.fixture
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        yield engine


def cache_of(eng: Engine) -> SeriesCache:
    return SeriesCache(ModelNames(read_context(eng).model_names))


def counts(eng: Engine) -> tuple[int, int, int]:
    def one(sql: str) -> int:
        return int(eng.con.execute(sql).fetchall()[0][0])

    return (
        one("SELECT count(*) FROM gpu_metrics"),
        one("SELECT count(*) FROM prom_samples"),
        one("SELECT count(*) FROM wanka.stale_markers"),
    )


def test_a_retried_request_is_stored_once(eng: Engine) -> None:
    cache = cache_of(eng)
    sent = scrape(3, 2, METRICS, NOW)
    first = append(eng.cursor(), decode(sent, cache, Limits()))
    again = append(eng.cursor(), decode(sent, cache, Limits()))
    assert (first.gpu, first.duplicates) == (12, 0)
    assert (again.gpu, again.duplicates) == (0, 12)
    assert counts(eng) == (12, 0, 0)
    rows = eng.con.execute(
        "SELECT host, gpu, uuid, model, metric, labels FROM gpu_metrics ORDER BY ALL LIMIT 1"
    ).fetchall()
    assert rows == [
        (
            "node000",
            0,
            "GPU-0000-00",
            "H100",
            "DCGM_FI_DEV_GPU_UTIL",
            '{"device":"nvidia0","instance":"node000:9400","job":"dcgm",'
            '"modelName":"NVIDIA H100 80GB HBM3"}',
        )
    ]


def test_other_series_and_staleness_markers(eng: Engine) -> None:
    up = [("__name__", "up"), ("instance", "node000:9100"), ("job", "node")]
    gone = dcgm_labels(1, 0, "DCGM_FI_DEV_GPU_UTIL")
    sent = body(
        [(up, [(NOW, 1.0), (NOW + 15_000, 0.0)]), (gone, [(NOW, 5.0), (NOW + 15_000, STALE)])]
    )
    done = append(eng.cursor(), decode(sent, cache_of(eng), Limits()))
    assert (done.gpu, done.other, done.stale) == (1, 2, 1)
    stale = eng.con.execute("SELECT metric, labels FROM wanka.stale_markers").fetchall()
    assert stale[0][0] == "DCGM_FI_DEV_GPU_UTIL" and '"Hostname":"node001"' in stale[0][1]
    assert eng.con.execute("SELECT labels FROM prom_samples LIMIT 1").fetchall() == [
        ('{"instance":"node000:9100","job":"node"}',)
    ]
    # a NaN that is not the marker is a value
    nan = body([(up, [(NOW + 30_000, float("nan"))])])
    assert append(eng.cursor(), decode(nan, cache_of(eng), Limits())).other == 1


def test_a_series_the_cache_knows_ends_with_its_labels(eng: Engine) -> None:
    """The second request of a steady feed sends a cached series' id, not its labels; its
    staleness marker is still stored by metric and labels (the CI failure of 2026-12-03)."""
    cache = cache_of(eng)
    gone = dcgm_labels(2, 1, "DCGM_FI_DEV_GPU_UTIL")
    append(eng.cursor(), decode(body([(gone, [(NOW, 7.0)])]), cache, Limits()), cache=cache)
    ended = decode(body([(gone, [(NOW + 15_000, 8.0), (NOW + 30_000, STALE)])]), cache, Limits())
    assert ended.series["series_id"].null_count == 0  # sent by id
    done = append(eng.cursor(), ended, cache=cache)
    assert (done.gpu, done.stale) == (1, 1)
    [(metric, labels)] = eng.con.execute(
        "SELECT metric, labels FROM wanka.stale_markers"
    ).fetchall()
    assert metric == "DCGM_FI_DEV_GPU_UTIL" and '"Hostname":"node002"' in labels


@settings(
    max_examples=examples(0.25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    picks=st.lists(
        st.tuples(
            st.integers(0, 2), st.integers(0, 1), st.integers(0, 4), st.floats(allow_nan=False)
        ),
        min_size=1,
        max_size=40,
    ),
    split=st.integers(1, 5),
)
def test_any_regrouping_of_deliveries_stores_each_sample_once(
    warehouses: Warehouses, picks: list[tuple[int, int, int, float]], split: int
) -> None:
    """Samples sent in any grouping, some groups twice, store as the set of distinct
    (series, ts), each with a value that was sent for it."""
    with warehouses.engine() as eng:
        cache = cache_of(eng)
        entries = [(dcgm_labels(h, g, METRICS[0]), [(NOW + k * 15_000, v)]) for h, g, k, v in picks]
        groups = [entries[i::split] for i in range(split)]
        decoded = [decode(body(g), cache, Limits()) for g in groups if g]
        append(eng.cursor(), merge(decoded[:2]))
        for part in decoded:
            append(eng.cursor(), part)
        sent: dict[tuple[str, int, object], set[float]] = {}
        for h, g, k, v in picks:
            sent.setdefault((f"node{h:03d}", g, k), set()).add(v)
        stored = eng.con.execute(
            f"SELECT host, gpu, (epoch_ms(ts) - {NOW}) // 15000, value FROM gpu_metrics"
        ).fetchall()
        assert all(v in sent[(h, g, k)] for h, g, k, v in stored)
        assert counts(eng)[0] == len({(h, g, k) for h, g, k, _ in picks})


def test_bad_requests_say_what_is_wrong(eng: Engine) -> None:
    cache = cache_of(eng)
    cases = [
        (b"\x05abc", "snappy"),
        (b"\xff\xff\xff\xff\x7f", "inflates to"),
        (body([([("job", "x")], [(NOW, 1.0)])]), "no __name__"),
        (body([([("__name__", "up"), ("job", "a"), ("job", "b")], [(NOW, 1.0)])]), "'job' twice"),
        (body([([("__name__", "up"), ("bad-name", "a")], [(NOW, 1.0)])]), "not a label name"),
        (body([([("__name__", "up")], [(NOW + 86_400_000, 1.0)])]), "outside the accepted"),
        (body([([("__name__", "up")], [(1000, 1.0)])]), "outside the accepted"),
        (body([([("__name__", "up"), ("v", "x" * 20_000)], [(NOW, 1.0)])]), "over 16,384"),
    ]
    for sent, said in cases:
        with pytest.raises(BadRequest, match=said):
            decode(sent, cache, Limits())
    assert counts(eng) == (0, 0, 0)


@given(
    st.dictionaries(
        st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True).filter(
            lambda n: not n.startswith("__")
        ),
        st.text(min_size=1, max_size=8),
        max_size=6,
    ),
    st.sampled_from(["0", "7", "07", "+1", "x", None]),
    st.booleans(),
)
def test_labels_round_trip(extra: dict[str, str], gpu: str | None, hostname: bool) -> None:
    """A DCGM series' labels rebuild exactly from the columns they were stored as."""
    sent = dict(extra)
    sent.setdefault("instance", "node9:9400")
    if gpu is not None:
        sent["gpu"] = gpu
    if hostname:
        sent["Hostname"] = "node9"
    columns = mapping.gpu_columns(sent, ModelNames({}))
    assert columns is not None
    host, index, uuid, _, labels = columns
    assert mapping.rebuild("DCGM_X", host, index, uuid, labels) == {"__name__": "DCGM_X", **sent}
