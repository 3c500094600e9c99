"""bench_soak.py's tables and verdict: what one run at one size measured, as markdown."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from load_clients import pct
from soak_clients import Errors, Latencies, Samples
from soak_feed import FeedLog

#: (target, what is judged) in the order printed.
TARGETS = (
    ("feed lag median ≤ 2 s", "lag_median"),
    ("feed lag p99 ≤ 10 s", "lag_p99"),
    ("no backlog (no scrape still sending when the next was due)", "backlog"),
    ("every dynamic table within its freshness target", "fresh"),
    ("one-node panels p90 ≤ 1 s", "node_p90"),
    ("fleet panels p90 ≤ 1 s", "fleet_p90"),
    ("RSS growth over the second half ≤ 5 %", "rss_growth"),
    ("drain shown ≤ 60 s after the XID sample", "drain"),
    ("0 errors", "errors"),
    ("nothing lost (every sample sent stored exactly once)", "lost"),
)


@dataclass
class Soak:
    """One run at one size: what each part recorded."""

    gpus: int
    duration_s: float
    interval_s: float
    shards: int
    dashboards: int
    feed: FeedLog
    latencies: Latencies
    samples: Samples
    errors: Errors
    xid_gpu: tuple[str, int]
    drain_at: float | None  # time.time() when GET /v1/health showed it
    stored: dict[int, int]  # stamp ms -> samples in gpu_metrics
    refreshes: dict[str, tuple[int, int]]  # table -> (succeeded, failed) in the run
    built_s: float | None
    judged: dict[str, tuple[str, bool]] = field(default_factory=dict)  # key -> (measured, ok)


def table_lags(soak: Soak) -> dict[str, tuple[float | None, float, float]]:
    """Per dynamic table: (its first refresh of the run, s from the start, or None; the largest
    lag seen; its target). A table past its target when the run began (a `--db` built long
    before) is judged from its first refresh on."""
    found = {}
    for name, target in soak.samples.target_s.items():
        seen = soak.samples.lag_s.get(name, [])
        refreshed = next((at for at, lag in seen if lag <= at), None)
        stale = bool(seen) and seen[0][1] > target
        after = [lag for at, lag in seen if not stale or (refreshed and at >= refreshed)]
        found[name] = (refreshed, max(after, default=float("nan")), target)
    return found


def at_tenths(at_s: list[float], values: list[float], duration_s: float) -> list[float]:
    """The value last sampled at or before each tenth of the run.

    >>> at_tenths([2, 4, 6, 8, 10], [1, 2, 3, 4, 5], 10.0)
    [nan, 1, 1, 2, 2, 3, 3, 4, 4, 5]
    """
    out = []
    for i in range(1, 11):
        before = [v for at, v in zip(at_s, values, strict=True) if at <= i * duration_s / 10]
        out.append(before[-1] if before else float("nan"))
    return out


def rss_between(soak: Soak, start: float, end: float) -> list[tuple[float, float]]:
    """The RSS samples (seconds into the run, KiB) after `start` and up to `end`, as shares of
    the run."""
    d, s = soak.duration_s, soak.samples
    return [(at, r) for at, r in zip(s.at_s, s.rss_kib, strict=True) if start * d < at <= end * d]


def rss_growth_pct(soak: Soak) -> float:
    """RSS over the second half: the median of its last tenth against that of its sixth
    (the first tenth of the second half), in %."""
    sixth, last = rss_between(soak, 0.5, 0.6), rss_between(soak, 0.9, 1.0)
    if not sixth or not last:
        return float("nan")
    early = statistics.median(r for _, r in sixth)
    return (statistics.median(r for _, r in last) - early) / early * 100


def rss_trend_pct(soak: Soak) -> float:
    """RSS over the second half by a least-squares line through every sample of it: the
    line's rise over the half against its value at half time, in % (beside the verdict's
    medians, which a single tenth's swing moves less)."""
    d, half = soak.duration_s, rss_between(soak, 0.5, 1.0)
    if len(half) < 2:
        return float("nan")
    slope, intercept = statistics.linear_regression([a for a, _ in half], [r for _, r in half])
    start = slope * 0.5 * d + intercept
    return slope * 0.5 * d / start * 100


def judge(soak: Soak) -> None:
    lags = [lag for scrape in soak.feed.lags_s for lag in scrape]
    fresh = table_lags(soak)
    worst = max(fresh.items(), key=lambda kv: _ratio(kv[1][1], kv[1][2]), default=None)
    drain = _drain_s(soak)
    growth = rss_growth_pct(soak)
    errors = sum(soak.errors.counts.values())
    bad_scrapes = sum(soak.stored.get(ms, 0) != n for ms, n in soak.feed.answered.items())
    node, fleet = pct(soak.latencies.node_s, 0.9), pct(soak.latencies.fleet_s, 0.9)
    soak.judged = {
        "lag_median": (f"{pct(lags, 0.5):.2f} s", pct(lags, 0.5) <= 2),
        "lag_p99": (f"{pct(lags, 0.99):.2f} s", pct(lags, 0.99) <= 10),
        "backlog": (f"{soak.feed.behind(soak.interval_s)} scrapes behind",
                    soak.feed.behind(soak.interval_s) == 0),
        "fresh": (f"worst {worst[0]}: {worst[1][1]:.0f} s / {worst[1][2]:.0f} s" if worst
                  else "no lag seen", worst is not None and _ratio(*worst[1][1:]) <= 1),
        "node_p90": (f"{node:.2f} s", node <= 1),
        "fleet_p90": (f"{fleet:.2f} s", fleet <= 1),
        "rss_growth": (f"{growth:+.1f} %", growth <= 5),
        "drain": (f"{drain:.1f} s" if drain is not None else "not shown", drain is not None
                  and drain <= 60),
        "errors": (f"{errors}", errors == 0),
        "lost": (f"{soak.feed.lost_samples:,} given up, {bad_scrapes} scrapes miscounted",
                 soak.feed.lost_samples == 0 and bad_scrapes == 0
                 and set(soak.stored) <= set(soak.feed.answered)),
    }  # fmt: skip


def _ratio(lag: float, target: float) -> float:
    """Lag over target, a lag never seen (NaN) counting as the worst."""
    return lag / target if lag == lag else math.inf


def _drain_s(soak: Soak) -> float | None:
    if soak.drain_at is None or soak.feed.xid_stamp_ms is None:
        return None
    return soak.drain_at - soak.feed.xid_stamp_ms / 1000


def report(soak: Soak) -> None:
    f = soak.feed
    per_scrape = soak.gpus * 40
    built = f"demo built in {soak.built_s:.0f} s; " if soak.built_s is not None else ""
    print(f"\n### {soak.gpus:,} GPUs, {soak.duration_s:g} s\n")
    print(f"{built}{soak.gpus:,} GPUs × 40 fields = {per_scrape:,} samples every "
          f"{soak.interval_s:g} s, 2,000 a request over {soak.shards} connections"
          f"{', spread over the interval' if f.last_offset_s else ', all at once'}, "
          f"{len(f.due_s)} scrapes; {soak.dashboards} Grafana users, each refreshing every "
          "30 s; a BI client every 10 s; XID 79 at half time\n")  # fmt: skip
    lags = [lag for scrape in f.lags_s for lag in scrape]
    first = f.lags_s[0] if f.lags_s else []
    late = [s - d for d, s in zip(f.due_s, f.started_s, strict=True)]
    print("| feed (scrape time → request answered) | median s | p99 s | max s |")
    print("|---|---:|---:|---:|")
    for name, values in (("every request", lags), ("the first scrape's (new series)", first)):
        print(f"| {name} | {pct(values, 0.5):.2f} | {pct(values, 0.99):.2f} | "
              f"{max(values, default=float('nan')):.2f} |")  # fmt: skip
    behind = f.behind(soak.interval_s)
    print(f"\nbacklog: {behind} of {len(f.due_s)} scrapes with a request answered over "
          f"{soak.interval_s:g} s after it was sent; "
          f"latest start {max(late, default=0):.2f} s after its time\n")  # fmt: skip
    lat = soak.latencies
    print("| client | requests | median s | p90 s | max s |")
    print("|---|---:|---:|---:|---:|")
    for name, values in (
        ("dashboard, one node's panels (PromQL range, 1 h, 30 s step)", lat.node_s),
        ("dashboard, fleet panels", lat.fleet_s),
        ("dashboard load (label values of $instance, $gpu)", lat.load_s),
        ("BI (SQL over pgwire)", lat.bi_s),
    ):
        print(f"| {name} | {len(values):,} | {pct(values, 0.5):.3f} | {pct(values, 0.9):.3f} | "
              f"{max(values, default=float('nan')):.3f} |")  # fmt: skip
    _print_tables(soak)
    _print_gate(soak)
    _print_timeline(soak)
    _print_memory(soak)
    _print_xid_and_count(soak)
    _print_errors(soak)


def _print_tables(soak: Soak) -> None:
    print("\n| dynamic table | target s | first refresh of the run at s | max lag s | "
          "lag / target | refreshes ok | failed |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (caught, lag, target) in sorted(table_lags(soak).items()):
        ok, failed = soak.refreshes.get(name, (0, 0))
        when = f"{caught:.0f}" if caught is not None else "–"
        print(f"| {name} | {target:g} | {when} | {lag:.0f} | {lag / target:.2f} | {ok} | "
              f"{failed} |")  # fmt: skip


def _print_gate(soak: Soak) -> None:
    """Who held the one write gate, and who waited for it (the server's /metrics, cumulative
    since it started); remote_write's mean group per transaction."""
    s = soak.samples
    print("\n| writer at the write gate | held s | share of the run | waited s |")
    print("|---|---:|---:|---:|")
    for kind in sorted(set(s.gate_held_s) | set(s.gate_wait_s)):
        held = s.gate_held_s.get(kind, 0.0)
        print(f"| {kind} | {held:.1f} | {held / soak.duration_s:.1%} | "
              f"{s.gate_wait_s.get(kind, 0.0):.1f} |")  # fmt: skip
    commits, requests = s.commits
    if commits:
        print(
            f"\nremote_write: {requests:,.0f} requests in {commits:,.0f} transactions, "
            f"{requests / commits:.1f} a transaction"
        )


def in_tenths(at_s: list[float], values: list[float], duration_s: float) -> list[list[float]]:
    """The values whose times fall in each tenth of the run (the last one takes what is later).

    >>> in_tenths([0.5, 1.5, 9.9, 12], [1, 2, 3, 4], 10.0)
    [[1], [2], [], [], [], [], [], [], [], [3, 4]]
    """
    out: list[list[float]] = [[] for _ in range(10)]
    for at, value in zip(at_s, values, strict=True):
        out[min(max(int(at * 10 // duration_s), 0), 9)].append(value)
    return out


def _print_timeline(soak: Soak) -> None:
    """The feed's lag by the tenth of the run its scrape was due in, beside the seconds each
    scheduler writer held the write gate in that tenth: what a slow request waited behind."""
    f, s = soak.feed, soak.samples
    lags = in_tenths(f.due_s, [max(scrape, default=0.0) for scrape in f.lags_s], soak.duration_s)
    p99 = in_tenths(
        f.due_s, [pct(scrape, 0.99) if scrape else 0.0 for scrape in f.lags_s], soak.duration_s
    )
    print("\n| each tenth of the run | " + " | ".join(f"{i}0 %" for i in range(1, 11)) + " |")
    print("|---|" + "---:|" * 10)
    for name, values in (("feed lag, worst scrape's p99 s", p99), ("feed lag, max s", lags)):
        cells = [f"{max(v):.2f}" if v else "–" for v in values]  # no scrape due in a tenth
        print(f"| {name} | " + " | ".join(cells) + " |")
    kinds = sorted({k for held in s.gate_held_at for k in held} - {"remote_write"})
    ends = at_tenths(s.at_s, list(range(len(s.at_s))), soak.duration_s)
    for kind in kinds:
        totals = [s.gate_held_at[int(i)].get(kind, 0.0) if i == i else 0.0 for i in ends]
        spent = [b - a for a, b in zip([0.0, *totals[:-1]], totals, strict=True)]
        print(f"| gate held by {kind}, s | " + " | ".join(f"{v:.1f}" for v in spent) + " |")


def _print_memory(soak: Soak) -> None:
    s = soak.samples
    rss = at_tenths(s.at_s, [k / 1024 for k in s.rss_kib], soak.duration_s)
    duckdb = at_tenths(s.at_s, [b / 2**20 for b in s.duckdb_bytes], soak.duration_s)
    print(
        "\n| MiB at each tenth of the run | " + " | ".join(f"{i}0 %" for i in range(1, 11)) + " |"
    )
    print("|---|" + "---:|" * 10)
    print("| server RSS | " + " | ".join(f"{v:,.0f}" for v in rss) + " |")
    tenths = [[r / 1024 for _, r in rss_between(soak, i / 10, (i + 1) / 10)] for i in range(10)]
    medians = [f"{statistics.median(v):,.0f}" if v else "–" for v in tenths]  # as the verdict's
    print("| server RSS, median of the tenth | " + " | ".join(medians) + " |")
    print("| DuckDB buffer manager | " + " | ".join(f"{v:,.0f}" for v in duckdb) + " |")
    if s.anon_kib:
        anon = at_tenths(s.at_s, [k / 1024 for k in s.anon_kib], soak.duration_s)
        lazy = at_tenths(s.at_s, [k / 1024 for k in s.lazyfree_kib], soak.duration_s)
        arrow = at_tenths(s.at_s, [b / 2**20 for b in s.arrow_bytes], soak.duration_s)
        print("| Arrow's pool, allocated | " + " | ".join(f"{v:,.0f}" for v in arrow) + " |")
        print("| RSS: anonymous | " + " | ".join(f"{v:,.0f}" for v in anon) + " |")
        print("| of it lazily freed | " + " | ".join(f"{v:,.0f}" for v in lazy) + " |")
        filed = [r - a for r, a in zip(rss, anon, strict=True)]
        print("| RSS: file-backed | " + " | ".join(f"{v:,.0f}" for v in filed) + " |")
    if len(s.python_blocks) == len(s.at_s):
        blocks = at_tenths(s.at_s, [b / 1e6 for b in s.python_blocks], soak.duration_s)
        print("| Python objects, millions | " + " | ".join(f"{v:,.2f}" for v in blocks) + " |")
    if len(s.dead_nodes) == len(s.at_s):
        dead = at_tenths(s.at_s, [n / 1e3 for n in s.dead_nodes], soak.duration_s)
        print("| DuckDB eviction queues, dead entries, thousands | "
              + " | ".join(f"{v:,.0f}" for v in dead) + " |")  # fmt: skip
    if s.duckdb_tags:
        held = sorted(s.duckdb_tags.items(), key=lambda kv: -kv[1])
        print(
            "\nDuckDB's buffer manager at the end, by tag (MiB): "
            + ", ".join(
                f"{tag or '?'} {value / 2**20:,.0f}" for tag, value in held if value >= 2**20
            )
        )
    print(f"\nRSS growth over the second half (median of the last tenth against the sixth): "
          f"{rss_growth_pct(soak):+.1f} %; by a least-squares line through its samples: "
          f"{rss_trend_pct(soak):+.1f} %")  # fmt: skip


def _print_xid_and_count(soak: Soak) -> None:
    f, (host, gpu) = soak.feed, soak.xid_gpu
    drain = _drain_s(soak)
    if f.xid_stamp_ms is None:
        print("\nXID 79: never sent")
    else:
        stored = f"{soak.drain_at - f.xid_stored_at:.1f} s after its request was answered" if (
            soak.drain_at and f.xid_stored_at) else "–"  # fmt: skip
        shown = f"{drain:.1f} s after the sample ({stored})" if drain is not None else "never"
        print(f"\nXID 79 on {host} GPU {gpu}: GET /v1/health showed it `drain` {shown}")
    sent = sum(f.answered.values())
    stored_n = sum(soak.stored.values())
    wrong = sum(soak.stored.get(ms, 0) != n for ms, n in f.answered.items())
    print(f"\ncount check: {sent:,} samples sent and answered, {stored_n:,} in gpu_metrics at "
          f"those timestamps; {wrong} of {len(f.answered)} scrapes differ; "
          f"{f.lost_samples:,} samples given up on")  # fmt: skip


def _print_errors(soak: Soak) -> None:
    counts = soak.errors.counts
    if not counts:
        print("\nerrors: none")
        return
    print("\n| face | error | count | first |")
    print("|---|---|---:|---|")
    for (face, kind), n in sorted(counts.items()):
        first = soak.errors.first[face, kind].replace("|", "\\|").replace("\n", " ")
        print(f"| {face} | {kind} | {n} | {first} |")


def print_verdicts(soaks: list[Soak]) -> None:
    print("\n### verdict\n")
    print("| target | " + " | ".join(f"{s.gpus:,} GPUs" for s in soaks) + " |")
    print("|---|" + "---|" * len(soaks))
    for title, key in TARGETS:
        cells = [f"{'pass' if s.judged[key][1] else 'FAIL'} ({s.judged[key][0]})" for s in soaks]
        print(f"| {title} | " + " | ".join(cells) + " |")
