"""Tables, dynamic tables, ingest, health and metrics over HTTP."""

from __future__ import annotations

from tests.service.http.conftest import Served

INVENTORY = b"host,cluster,gpu_model,gpus\nh001,c1,H100,8\nh002,c1,H100,8\n"


def test_tables_and_one_table(served: Served) -> None:
    listing = served.client.get("/v1/tables", auth=served.auth("reader")).json()
    names = {t["name"] for t in listing}
    assert {"jobs", "nodes", "gpu_metrics", "wanka.dynamic_tables"} <= names
    assert not names & {"wanka.users", "wanka.tokens"}
    sites = served.client.get("/v1/tables/sites", auth=served.auth("reader")).json()
    assert sites["rows"] >= 2
    assert sites["columns"][0]["name"] == "site" and sites["columns"][0]["type"] == "VARCHAR"
    missing = served.client.get("/v1/tables/wanka.users", auth=served.auth("reader"))
    assert missing.status_code == 404 and "error" in missing.json()


def test_ingest_raw_then_duplicate_then_multipart(served: Served) -> None:
    first = served.client.post(
        "/v1/ingest/inventory?name=inv.csv", content=INVENTORY, auth=served.auth("writer")
    )
    assert first.status_code == 200, first.text
    assert first.json()[0]["rows"] == {"nodes": 2}
    again = served.client.post(
        "/v1/ingest/inventory", content=INVENTORY, auth=served.auth("writer")
    )
    assert again.json()[0]["duplicate_of"] == first.json()[0]["batch_id"]
    parts = served.client.post(
        "/v1/ingest/inventory",
        files=[
            ("file", ("a.csv", b"host,gpus\nh003,4\n")),
            ("file", ("b.csv", b"host,gpus\nh004,4\n")),
        ],
        auth=served.auth("writer"),
    )
    assert [r["rows"] for r in parts.json()] == [{"nodes": 1}, {"nodes": 1}]
    count = served.client.post(
        "/v1/query",
        json={"sql": "SELECT count(*) FROM nodes WHERE host LIKE 'h00%'"},
        auth=served.auth("reader"),
    )
    assert count.json()["rows"] == [[4]]


def test_ingest_refusals(served: Served) -> None:
    reader = served.client.post(
        "/v1/ingest/inventory", content=INVENTORY, auth=served.auth("reader")
    )
    assert reader.status_code == 403
    unknown = served.client.post("/v1/ingest/xml", content=b"<x/>", auth=served.auth("writer"))
    assert unknown.status_code == 400 and "xml" in unknown.json()["error"]
    big = served.client.post(
        "/v1/ingest/csv?table=sites", content=b"x" * (2 << 20), auth=served.auth("writer")
    )
    assert big.status_code == 413


def test_dynamic_tables_list_and_refresh(served: Served) -> None:
    create = served.client.post(
        "/v1/query",
        json={
            "sql": "CREATE DYNAMIC TABLE gpus_by_model WITH (freshness = '1 hour') AS "
            "SELECT gpu_model, sum(gpus) AS gpus FROM nodes GROUP BY gpu_model"
        },
        auth=served.auth("admin"),
    )
    assert create.status_code == 200, create.text
    listing = served.client.get("/v1/dynamic-tables", auth=served.auth("reader")).json()
    assert "gpus_by_model" in {t["name"] for t in listing}
    refused = served.client.post(
        "/v1/dynamic-tables/gpus_by_model/refresh", auth=served.auth("reader")
    )
    assert refused.status_code == 403
    done = served.client.post(
        "/v1/dynamic-tables/gpus_by_model/refresh", auth=served.auth("writer")
    )
    assert done.status_code == 200 and done.json()[0]["outcome"] == "refreshed"
    missing = served.client.post("/v1/dynamic-tables/nope/refresh", auth=served.auth("writer"))
    assert missing.status_code == 404
    metrics = served.client.get("/metrics").text
    assert 'wanka_dynamic_table_lag_seconds{table="gpus_by_model"}' in metrics


def test_metrics_count_queries_errors_and_ingest(served: Served) -> None:
    served.client.post("/v1/query", json={"sql": "SELECT 1"}, auth=served.auth("reader"))
    served.client.post("/v1/query", json={"sql": "COPY x TO 'y'"}, auth=served.auth("reader"))
    served.client.post(
        "/v1/ingest/inventory", content=b"host,gpus\nm1,8\n", auth=served.auth("writer")
    )
    text = served.client.get("/metrics").text
    assert 'wanka_queries_total{face="http",format="json",outcome="ok"}' in text
    assert 'wanka_query_errors_total{error="Refused",face="http"}' in text
    assert "wanka_query_duration_seconds_bucket" in text
    assert 'wanka_ingest_rows_total{format="inventory",table="nodes"}' in text


def test_metrics_show_memory_by_holder(served: Served) -> None:
    text = served.client.get("/metrics").text
    gauges = {
        line.split()[0]: float(line.split()[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert gauges["process_resident_memory_bytes"] > 10 << 20  # a Python process with DuckDB
    assert gauges["wanka_python_allocated_blocks"] > 10_000
    duckdb_tags = [k for k in gauges if k.startswith("wanka_duckdb_memory_bytes{tag=")]
    assert duckdb_tags and all(gauges[k] > 0 for k in duckdb_tags)
    arrow = [k for k in gauges if k.startswith("wanka_arrow_memory_bytes{pool=")]
    assert len(arrow) == 1 and gauges[arrow[0]] >= 0
    queues = {k for k in gauges if k.startswith("wanka_duckdb_eviction_queue_nodes{")}
    assert 'wanka_duckdb_eviction_queue_nodes{queue="MANAGED_BUFFER",state="dead"}' in queues
    assert all(gauges[k] >= 0 for k in queues)
