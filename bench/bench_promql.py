"""NVIDIA's dcgm-exporter Grafana dashboard on wanka, a real Prometheus 2.42 and a real
VictoriaMetrics 1.79 (Debian's), same samples.

Run: `.venv/bin/python bench/bench_promql.py [--gpus 10000] [--hours 6] [--repeat 3]`.

The samples: GPUs on 8-GPU nodes, each with dcgm-exporter's label set, the dashboard's six
fields scraped every 60 s for `--hours`, ending now; the scrapes fall `SCRAPE_OFFSET_S` past the
minute, as real ones do, so that no sample sits on the left edge of a `[1h]` window whose end is
a whole 5 minutes (Prometheus 2.42 counts a sample there, VictoriaMetrics does not). The three
stores get the same remote_write requests (snappy protobuf, a half hour of samples per series
entry, in time order so that Prometheus's head takes them all): Prometheus and VictoriaMetrics
over HTTP at /api/v1/write, wanka through its remote_write decode and store into the database
that `wanka serve` then serves; the ingest times are those of each. Prometheus is given time to
compact its head as a live one would have; wanka is served with `--promql-cache-offset 0` (no
result cache) as VictoriaMetrics is started with `-search.disableCache` (and
`-retentionPeriod=100y`); VictoriaMetrics is flushed (`/internal/force_flush`, counted in its
ingest) and given time to finish its background merges; wanka's database is compacted as
`wanka serve`'s scheduler keeps it (`compact` with the real now and its `FLUSH`: the closed 2 h
windows go into compressed blocks, and so do the open window's closed 10 minutes; the rest, about
a quarter of an hour, stays hot).

Then Grafana's requests, over HTTP to both: the template variables
(`label_values(DCGM_FI_DEV_GPU_TEMP, instance)` and `..., gpu)` as /api/v1/label/*/values),
every panel with the variables set to All as Grafana expands them (a regex of every value),
as `query_range` over the whole span at a 60 s step. Each is timed from request to the last
byte of the answer, the two servers alternating, `--repeat` times; the table prints medians,
wanka's time over Prometheus's, and whether the answers are equal (the same series, labels,
timestamps, values within 1e-9 relative).

Then VictoriaMetrics' comparison queries, as `query_range` over the whole span (its ends on
whole 5 minutes) at a 5 min step, to all three servers in turn: `sum` of the power, the hourly
average temperature per host, the highest temperature per GPU model; the table prints medians,
wanka's time over VictoriaMetrics' (goal: at most 2x), and whether wanka's answer equals
VictoriaMetrics' and Prometheus's.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.promql_samples import FIELDS, SCRAPE_OFFSET_S, SCRAPE_S, compact_now, load
from bench.promql_stores import settle, settle_victoria, start_prometheus, start_victoria
from bench.serving import start_server, wanka

REPO = Path(__file__).resolve().parents[1]
DASHBOARD = REPO.parent / "shared" / "data" / "grafana" / "dcgm-exporter-dashboard.json"
VERSUS_STEP_S = 300
USER, PASSWORD = "grafana", "bench-reader-pw"
#: VictoriaMetrics' comparison queries (the host label of `labels_of` is `Hostname`).
VERSUS = (
    ("sum of power", "sum(DCGM_FI_DEV_POWER_USAGE)"),
    ("hourly temp. per host", "avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_TEMP[1h]))"),
    ("max temp. per model", "max(DCGM_FI_DEV_GPU_TEMP) by (modelName)"),
)


def grafana_regex(values: list[str]) -> str:
    """A multi-value variable set to All as Grafana writes it into PromQL."""
    escaped = [re.sub(r"([\\^$*+?.()|{}\[\]])", r"\\\\\1", v) for v in values]
    return "(" + "|".join(escaped) + ")" if len(escaped) > 1 else escaped[0]


def timed_get(client: httpx.Client, url: str, params: dict[str, Any]) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    answer = client.get(url, params=params)
    body = answer.content
    took = time.perf_counter() - t0
    if answer.status_code != 200:
        raise SystemExit(
            f"{url} {params.get('query', '')[:80]}: {answer.status_code} {body[:300]!r}"
        )
    return took, body


def same(ours: bytes, theirs: bytes) -> str:
    """'yes', or what differs between two query API answers."""
    a, b = json.loads(ours)["data"], json.loads(theirs)["data"]
    if isinstance(a, list):
        return "yes" if sorted(a) == sorted(b) else f"values differ ({len(a)} vs {len(b)})"
    mine = {json.dumps(s["metric"], sort_keys=True): s["values"] for s in a["result"]}
    ref = {json.dumps(s["metric"], sort_keys=True): s["values"] for s in b["result"]}
    if mine.keys() != ref.keys():
        return f"series differ ({len(mine)} vs {len(ref)})"
    for key, points in mine.items():
        other = ref[key]
        if [p[0] for p in points] != [p[0] for p in other]:
            return f"timestamps differ in {key}"
        for (_, x), (_, y) in zip(points, other, strict=True):
            if x != y and not np.isclose(float(x), float(y), rtol=1e-9, atol=0):
                return f"value {x} vs {y} in {key}"
    return "yes"


def requests_of_dashboard(
    client: httpx.Client, prometheus: str, start_s: int, end_s: int
) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, path, params) of Grafana's requests: variables, then the panels expanded."""
    board = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    asked: list[tuple[str, str, dict[str, Any]]] = []
    regex: dict[str, str] = {}
    window = {"start": start_s, "end": end_s}
    for variable in board["templating"]["list"]:
        found = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", variable.get("query") or "")
        if found:
            metric, label = found.groups()
            path = f"/api/v1/label/{label}/values"
            params = {"match[]": metric, **window}
            asked.append((f"variable ${variable['name']}", path, params))
            values = client.get(f"{prometheus}{path}", params=params).json()["data"]
            regex[variable["name"]] = grafana_regex(values)
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expression = target["expr"]
            for name, pattern in regex.items():
                expression = expression.replace(f"${name}", pattern)
            params = {"query": expression, **window, "step": SCRAPE_S}
            asked.append((panel["title"], "/api/v1/query_range", params))
    return asked


def versus_requests(start_s: int, end_s: int) -> list[tuple[str, str, dict[str, Any]]]:
    """VictoriaMetrics' comparison queries over the whole span, its ends on the 5 min step."""
    start = -(-start_s // VERSUS_STEP_S) * VERSUS_STEP_S
    end = end_s // VERSUS_STEP_S * VERSUS_STEP_S
    window = {"start": start, "end": end, "step": VERSUS_STEP_S}
    return [(name, "/api/v1/query_range", {"query": q, **window}) for name, q in VERSUS]


Timed = tuple[str, dict[str, float], dict[str, bytes]]


def measure(
    asked: list[tuple[str, str, dict[str, Any]]], stores: dict[str, str], repeat: int
) -> list[Timed]:
    """(name, median seconds by store, last answer by store) of each request, the stores
    taking turns in `stores`' order, `repeat` times."""
    clients = {
        name: httpx.Client(timeout=600, auth=(USER, PASSWORD) if name == "wanka" else None)
        for name in stores
    }
    found = []
    try:
        for name, path, params in asked:
            times: dict[str, list[float]] = {store: [] for store in stores}
            bodies: dict[str, bytes] = {}
            for _ in range(repeat):
                for store, url in stores.items():
                    took, bodies[store] = timed_get(clients[store], f"{url}{path}", params)
                    times[store].append(took)
            found.append((name, {k: statistics.median(v) for k, v in times.items()}, bodies))
    finally:
        for client in clients.values():
            client.close()
    return found


def size_of(body: bytes) -> int:
    result = json.loads(body)["data"]
    return len(result) if isinstance(result, list) else len(result["result"])


def report(rows: list[Timed]) -> None:
    print("| request | series | wanka s | Prometheus s | wanka / Prometheus | equal |")
    print("|---|---:|---:|---:|---:|---|")
    for name, t, bodies in rows:
        ours, theirs = t["wanka"], t["prometheus"]
        equal = same(bodies["wanka"], bodies["prometheus"])
        print(f"| {name} | {size_of(bodies['prometheus']):,} | {ours:.3f} | {theirs:.3f} "
              f"| {ours / theirs:.2f}x | {equal} |")  # fmt: skip
    ours = sum(t["wanka"] for _, t, _ in rows)
    theirs = sum(t["prometheus"] for _, t, _ in rows)
    worst = max(rows, key=lambda r: r[1]["wanka"] / r[1]["prometheus"])
    print(f"| **total** | | {ours:.3f} | {theirs:.3f} | {ours / theirs:.2f}x | |")
    print(f"\nworst request: {worst[0]} at {worst[1]['wanka'] / worst[1]['prometheus']:.2f}x "
          "Prometheus's time (goal: total at most 1x, every panel at most 3x)")  # fmt: skip


def report_versus(rows: list[Timed]) -> None:
    print("| query | series | wanka s | VictoriaMetrics s | Prometheus s | wanka / VM "
          "| = VM | = Prometheus |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for name, t, bodies in rows:
        print(f"| {name} | {size_of(bodies['victoria']):,} | {t['wanka']:.3f} "
              f"| {t['victoria']:.3f} | {t['prometheus']:.3f} "
              f"| {t['wanka'] / t['victoria']:.2f}x | {same(bodies['wanka'], bodies['victoria'])} "
              f"| {same(bodies['wanka'], bodies['prometheus'])} |")  # fmt: skip
    total = {k: sum(t[k] for _, t, _ in rows) for k in ("wanka", "victoria", "prometheus")}
    print(
        f"| **total** | | {total['wanka']:.3f} | {total['victoria']:.3f} "
        f"| {total['prometheus']:.3f} | {total['wanka'] / total['victoria']:.2f}x | | |"
    )
    worst = max(rows, key=lambda r: r[1]["wanka"] / r[1]["victoria"])
    ratio = worst[1]["wanka"] / worst[1]["victoria"]
    print(
        f"\nworst query: {worst[0]} at {ratio:.2f}x VictoriaMetrics' time "
        f"(goal: at most 2x: {'met' if ratio <= 2 else 'NOT met'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=6)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    missing = [b for b in ("prometheus", "victoria-metrics") if shutil.which(b) is None]
    if missing or not DASHBOARD.exists():
        raise SystemExit("needs Debian's prometheus and victoria-metrics, and ../shared/data/"
                         f"grafana (missing: {', '.join(missing) or 'the dashboard'})")  # fmt: skip
    steps = int(args.hours * 3600 // SCRAPE_S) + 1
    end_ms = (int(time.time()) // SCRAPE_S * SCRAPE_S - 120 + SCRAPE_OFFSET_S) * 1000
    start_ms = end_ms - (steps - 1) * SCRAPE_S * 1000
    with tempfile.TemporaryDirectory(prefix="bench_promql_") as tmp:
        folder = Path(tmp)
        db = str(folder / "w.duckdb")
        wanka(db, "user", "add", USER, "--role", "reader", "--password-stdin", stdin=PASSWORD)
        prometheus, theirs = start_prometheus(folder)
        victoria, vm = start_victoria(folder)
        try:
            took = load(db, theirs, vm, args.gpus, steps, start_ms)
            samples = int(took["samples"])
            print(f"{args.gpus:,} GPUs x {len(FIELDS)} fields x {steps} scrapes "
                  f"({args.hours:g} h at {SCRAPE_S} s) = {samples:,} samples\n")  # fmt: skip
            print("| store (ingest of the same remote_write requests) | s | samples/s "
                  "| wanka / store |")  # fmt: skip
            print("|---|---:|---:|---:|")
            for name, key, how in (
                ("wanka", "wanka", "remote_write decode + store, in process"),
                ("VictoriaMetrics", "victoria", "POST /api/v1/write + force_flush"),
                ("Prometheus", "prometheus", "POST /api/v1/write"),
            ):
                print(f"| {name} ({how}) | {took[key]:.1f} | {samples / took[key]:,.0f} "
                      f"| {took['wanka'] / took[key]:.2f}x |")  # fmt: skip
            print(f"\nPrometheus: {settle(theirs, end_ms - start_ms)}")
            print(f"VictoriaMetrics: {settle_victoria(vm)}")
            moved, size, spent = compact_now(db)
            per = f" ({size / moved:.2f} B/sample)" if moved else ""
            print(f"wanka: {moved:,} of {samples:,} samples ({moved / samples:.0%}) compacted "
                  f"into blocks{per} in {spent:.1f} s, the rest hot")  # fmt: skip
            server, ours = start_server(db, "--timeout-s", "600", "--promql-cache-offset", "0")
            try:
                with httpx.Client(timeout=60) as client:
                    asked = requests_of_dashboard(client, theirs, start_ms // 1000, end_ms // 1000)
                print(f"\n{len(asked)} requests of the dashboard, medians of {args.repeat}, each "
                      "timed to the last byte of the answer over HTTP:\n")  # fmt: skip
                stores = {"prometheus": theirs, "wanka": ours}
                report(measure(asked, stores, args.repeat))
                versus = versus_requests(start_ms // 1000, end_ms // 1000)
                print(
                    f"\nVictoriaMetrics' comparison queries, query_range over the whole span at "
                    f"a {VERSUS_STEP_S // 60} min step, medians of {args.repeat} (cache off):\n"
                )
                stores = {"victoria": vm, "prometheus": theirs, "wanka": ours}
                report_versus(measure(versus, stores, args.repeat))
            finally:
                server.terminate()
                server.wait(timeout=30)
        finally:
            for process in (prometheus, victoria):
                process.terminate()
                process.wait(timeout=60)


if __name__ == "__main__":
    main()
