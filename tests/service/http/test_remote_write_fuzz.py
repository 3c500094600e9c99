"""Hostile remote_write bodies: truncated snappy, bad protobuf, huge labels, too many series,
NaN/Inf, timestamps far off. Each gets a clear 4xx (never a 5xx or a crash), nothing of it is
stored, and other clients are served meanwhile."""

from __future__ import annotations

import threading
import time

import cramjam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.service.http.conftest import Served
from tests.warehouse.remote_write.support import body, dcgm_labels, scrape
from warehouse.remote_write.messages import WriteRequest

HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}
NOW = int(time.time() * 1000)
DAY = 86_400_000


def stored(served: Served) -> tuple[int, int, int]:
    cur = served.server.engine.cursor()
    try:
        return tuple(  # type: ignore[return-value]
            int(cur.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
            for t in ("gpu_metrics", "prom_samples", "wanka.stale_markers")
        )
    finally:
        cur.close()


def post(served: Served, content: bytes) -> tuple[int, str]:
    answer = served.client.post(
        "/api/v1/write", content=content, headers=HEADERS, auth=served.auth("writer")
    )
    return answer.status_code, answer.text


def good() -> bytes:
    return body([(dcgm_labels(1, 0, "DCGM_FI_DEV_GPU_UTIL"), [(NOW, 1.0)])])


def mangle(raw: bytes, how: str, where: int, byte: int) -> bytes:
    """`raw` (an inflated WriteRequest) broken one way, compressed again or not."""
    at = where % max(len(raw), 1)
    if how == "truncate-snappy":
        packed = bytes(cramjam.snappy.compress_raw(raw))
        return packed[: at % max(len(packed) - 1, 1)]
    if how == "flip-protobuf":
        broken = raw[:at] + bytes([byte]) + raw[at + 1 :]
        return bytes(cramjam.snappy.compress_raw(broken))
    if how == "cut-protobuf":
        return bytes(cramjam.snappy.compress_raw(raw[:at]))
    return raw  # not compressed at all


request_parts = st.lists(
    st.tuples(
        st.dictionaries(
            st.text(st.characters(codec="utf-8"), min_size=0, max_size=20),
            st.text(st.characters(codec="utf-8"), max_size=40),
            max_size=4,
        ),
        st.lists(
            st.tuples(
                st.one_of(
                    st.integers(NOW - 2 * DAY, NOW + 60_000),
                    st.integers(-(2**62), 2**62),  # far past and future
                ),
                st.floats(allow_nan=True, allow_infinity=True),
            ),
            max_size=3,
        ),
    ),
    max_size=4,
)


@settings(max_examples=examples(0.6), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=request_parts,
    name=st.sampled_from(["DCGM_FI_DEV_GPU_UTIL", "node_load1", "", "bad name", None]),
    how=st.sampled_from(["none", "truncate-snappy", "flip-protobuf", "cut-protobuf", "raw"]),
    where=st.integers(0, 10_000),
    byte=st.integers(0, 255),
)
def test_any_body_is_stored_whole_or_refused_with_a_4xx(
    served: Served,
    parts: list[tuple[dict[str, str], list[tuple[int, float]]]],
    name: str | None,
    how: str,
    where: int,
    byte: int,
) -> None:
    request = WriteRequest()
    for labels, samples in parts:
        one = request.timeseries.add()
        if name is not None:
            one.labels.add(name="__name__", value=name)
        for key, value in sorted(labels.items()):
            one.labels.add(name=key, value=value)
        for ts, number in samples:
            one.samples.add(timestamp=ts, value=number)
    raw = request.SerializeToString()
    content = (
        bytes(cramjam.snappy.compress_raw(raw)) if how == "none" else mangle(raw, how, where, byte)
    )
    before = stored(served)
    status, text = post(served, content)
    assert status in (204, 400, 413), text
    if status != 204:
        assert stored(served) == before and text.strip()
    assert post(served, good())[0] == 204  # the receiver still works


def test_huge_label_values_and_too_many_series_are_refused_whole(served: Served) -> None:
    before = stored(served)
    huge = body([([("__name__", "node_load1"), ("x", "v" * (1 << 20))], [(NOW, 1.0)])])
    status, text = post(served, huge)
    assert status == 400 and "16,384 characters" in text
    many = scrape(1, 1, ["DCGM_FI_DEV_GPU_UTIL"], NOW)  # a valid series, then 100,001 of them
    request = WriteRequest()
    for i in range(100_001):
        one = request.timeseries.add()
        one.labels.add(name="__name__", value="m")
        one.labels.add(name="i", value=str(i))
        one.samples.add(timestamp=NOW, value=1.0)
    status, text = post(served, bytes(cramjam.snappy.compress_raw(request.SerializeToString())))
    assert status == 400 and "100,001 series" in text
    assert stored(served) == before
    assert post(served, many)[0] == 204


def test_other_clients_are_served_while_a_big_bad_request_is_refused(served: Served) -> None:
    request = WriteRequest()
    for i in range(60_000):
        one = request.timeseries.add()
        for name, value in dcgm_labels(i % 100, i % 8, "DCGM_FI_DEV_GPU_UTIL"):
            one.labels.add(name=name, value=value)
        one.samples.add(timestamp=NOW - 400 * DAY if i == 59_999 else NOW, value=1.0)
    bad = bytes(cramjam.snappy.compress_raw(request.SerializeToString()))
    answers: list[int] = []
    thread = threading.Thread(target=lambda: answers.append(post(served, bad)[0]))
    before = stored(served)
    thread.start()
    small = [post(served, scrape(1, 1, ["DCGM_FI_DEV_SM_CLOCK"], NOW + i))[0] for i in range(5)]
    thread.join(timeout=120)
    assert answers == [400] and small == [204] * 5
    assert stored(served)[0] == before[0] + 5  # the 60,000 samples before the bad one: none
