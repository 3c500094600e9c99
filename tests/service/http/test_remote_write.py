"""POST /api/v1/write answers as the Remote-Write spec says, and stores a retry once."""

from __future__ import annotations

import time

from tests.service.http.conftest import Served
from tests.warehouse.remote_write.support import body, dcgm_labels, scrape

HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
}
NOW = int(time.time() * 1000)


def stored(served: Served) -> int:
    cur = served.server.engine.cursor()
    try:
        return int(cur.execute("SELECT count(*) FROM gpu_metrics").fetchall()[0][0])
    finally:
        cur.close()


def test_write_then_retry_is_204_and_stored_once(served: Served) -> None:
    before = stored(served)
    sent = scrape(2, 2, ["DCGM_FI_DEV_GPU_UTIL"], NOW)
    for _ in range(2):
        answer = served.client.post(
            "/api/v1/write", content=sent, headers=HEADERS, auth=served.auth("writer")
        )
        assert answer.status_code == 204, answer.text
    bearer = {**HEADERS, "Authorization": f"Bearer {served.token}"}
    assert served.client.post("/api/v1/write", content=sent, headers=bearer).status_code == 204
    assert stored(served) == before + 4


def test_refusals_have_the_spec_status(served: Served) -> None:
    sent = scrape(1, 1, ["DCGM_FI_DEV_GPU_UTIL"], NOW + 60_000)
    writer = served.auth("writer")
    post = served.client.post
    assert post("/api/v1/write", content=sent, headers=HEADERS).status_code == 401
    assert (
        post("/api/v1/write", content=sent, headers=HEADERS, auth=served.auth("reader")).status_code
        == 403
    )
    v2 = {**HEADERS, "Content-Type": "application/x-protobuf;proto=io.prometheus.write.v2.Request"}
    answer = post("/api/v1/write", content=sent, headers=v2, auth=writer)
    assert answer.status_code == 415 and "2.0" in answer.json()["error"]
    plain = {**HEADERS, "Content-Encoding": "gzip"}
    assert post("/api/v1/write", content=sent, headers=plain, auth=writer).status_code == 415
    for bad in (b"not snappy", body([([("job", "x")], [(NOW, 1.0)])])):
        answer = post("/api/v1/write", content=bad, headers=HEADERS, auth=writer)
        assert answer.status_code == 400, answer.text
    before = stored(served)
    big = b"\x00" * (33 << 20)
    assert post("/api/v1/write", content=big, headers=HEADERS, auth=writer).status_code == 413
    assert stored(served) == before


def test_metrics_count_what_was_stored(served: Served) -> None:
    sent = scrape(1, 1, ["DCGM_FI_DEV_POWER_USAGE"], NOW + 120_000)
    for _ in range(2):
        served.client.post(
            "/api/v1/write", content=sent, headers=HEADERS, auth=served.auth("writer")
        )
    text = served.client.get("/metrics", auth=served.auth("admin")).text
    assert 'wanka_remote_write_samples_total{table="gpu_metrics"}' in text
    assert 'wanka_remote_write_not_stored_total{reason="duplicate"}' in text


def test_an_xid_sent_by_remote_write_is_evidence_of_node_risk(served: Served) -> None:
    """The GPU events a remote_write shows reach node_signals in its transaction, as an
    ingest's do: node_risk learns of a GPU that fell off the bus from the live feed."""
    xid = dcgm_labels(7, 3, "DCGM_FI_DEV_XID_ERRORS")
    for ts, code in ((NOW + 180_000, 0.0), (NOW + 195_000, 79.0)):
        answer = served.client.post(
            "/api/v1/write",
            content=body([(xid, [(ts, code)])]),
            headers=HEADERS,
            auth=served.auth("writer"),
        )
        assert answer.status_code == 204, answer.text
    cur = served.server.engine.cursor()
    try:
        found = cur.execute(
            "SELECT node, gpu, kind, detail FROM node_signals WHERE node = 'node007'"
        ).fetchall()
    finally:
        cur.close()
    assert [(n, g, k) for n, g, k, _ in found] == [("node007", 3, "gpu_failure")]
    assert found[0][3].startswith("XID 79")
