"""Model functions vs the same formula written as plain SQL, side by side in one process.

For every registered model function, over N rows generated with range(): the macro against
the same formula typed by hand (no NULL or domain checks), both reading their arguments from
the columns of a table (how model functions are used), and both computing their arguments
inline from range() (where a macro recomputes an argument expression at each reference).
Median of 3 interleaved runs each, and a check that every variant gives the same sum. Then,
for scale, one function as a row-at-a-time Python UDF and as the Arrow UDF the registry falls
back to on read-only files.

    .venv/bin/python bench/bench_udfs.py [--rows 50000000] [--python-rows 2000000] [--only f,g]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from udfs import registry

# Inputs: varied per row, inside each function's domain; the plain side gets the same text.
ANY = "(range % 1000 + 1)::DOUBLE"
FRAC = "((range % 100) / 100)::DOUBLE"
GEN = "(range % 6 + 1)"
LANES = "((range % 4 + 1) * 4)"
GBPS = "((range % 8 + 1) * 50)::DOUBLE"
COUNT = "(range % 64 + 1)"
PCIE = (
    "CASE {g} WHEN 1 THEN 2.5 * 0.8 / 8 WHEN 2 THEN 5 * 0.8 / 8 WHEN 3 THEN 8 * 128 / 130 / 8 "
    "WHEN 4 THEN 16 * 128 / 130 / 8 WHEN 5 THEN 32 * 128 / 130 / 8 WHEN 6 THEN 64 * 242 / 256 / 8 "
    "ELSE 128 * 242 / 256 / 8 END * {l}"
)
G = "least({2}, {1})"  # GPUs per node in use, for allreduce_s
N = f"ceil({{1}} / {G})"  # nodes

#: name -> (argument expressions, the formula as plain SQL over {0}, {1}, ...)
CASES: dict[str, tuple[list[str], str]] = {
    "pcie_gbs": ([GEN, LANES], PCIE.format(g="{0}", l="{1}")),
    "nic_gbs": ([GBPS], "{0} / 8"),
    "nic_effective_gbs": (
        [GBPS, GEN, LANES],
        "least({0} / 8, " + PCIE.format(g="{1}", l="{2}") + ")",
    ),
    "nic_bottleneck": (
        [GBPS, GEN, LANES],
        "CASE WHEN {0} / 8 <= " + PCIE.format(g="{1}", l="{2}") + " THEN 'nic' ELSE 'pcie' END",
    ),
    "node_nic_gbs": (
        [COUNT, GBPS, GEN, LANES],
        "{0} * least({1} / 8, " + PCIE.format(g="{2}", l="{3}") + ")",
    ),
    "nvlink_gbs": ([COUNT, ANY, "(range % 2 = 0)"], "{0} * {1} * CASE WHEN {2} THEN 2 ELSE 1 END"),
    "fiber_rtt_ms": ([ANY], "2 * {0} * 0.0049"),
    "cross_site_efficiency": ([ANY, ANY, ANY, ANY], "{0} / ({0} + {1} / ({2} * 1e9) + {3} / 1000)"),
    "busbw_factor": (
        ["['all_reduce', 'all_gather', 'broadcast'][range % 3 + 1]", COUNT],
        "CASE {0} WHEN 'all_reduce' THEN 2 * ({1} - 1) / {1} "
        "WHEN 'all_gather' THEN ({1} - 1) / {1} ELSE 1 END",
    ),
    "busbw_gbs": (["'all_reduce'", COUNT, ANY, ANY], "{2} / {3} / 1e9 * (2 * ({1} - 1) / {1})"),
    "collective_s": (
        ["'all_reduce'", COUNT, ANY, ANY],
        "{2} * (2 * ({1} - 1) / {1}) / ({3} * 1e9)",
    ),
    "allreduce_s": (
        [ANY, "(range % 4096 + 1)", "8", ANY, ANY, "'hierarchical'", ANY],
        f"2 * ({G} - 1) / {G} * {{0}} / ({{3}} * 1e9) + 2 * ({N} - 1) / {N} * {{0}} / ({{4}} * 1e9)"
        f" + (2 * ({G} - 1) + 2 * ({N} - 1)) * ({{6}} * 1e-6)",
    ),
    "checkpoint_bytes_per_param": (
        ["['bf16', 'fp32'][range % 2 + 1]", "['adamw', 'none', 'sgd'][range % 3 + 1]"],
        "CASE {0} WHEN 'fp32' THEN 4 ELSE 2 END + CASE WHEN {1} = 'none' THEN 0 ELSE "
        "CASE {0} WHEN 'fp32' THEN 0 ELSE 4 END + CASE {1} WHEN 'sgd' THEN 4 ELSE 8 END END",
    ),
    "checkpoint_bytes": ([ANY, "'bf16'", "'adamw'"], "{0} * 14"),
    "link_write_gbs": (
        [GBPS, "(range % 4 + 1)", "'802.3ad'", "(range % 8 + 1)"],
        "{0} / 8 * least({3}, {1})",
    ),
    "checkpoint_write_s": ([ANY, COUNT, ANY, ANY], "{0} / (least({1} * {2}, {3}) * 1e9)"),
    "checkpoint_stall_s": ([ANY, COUNT, ANY], "{0} / {1} / ({2} * 1e9)"),
    "young_interval_s": ([ANY, ANY], "sqrt(2 * {0} * {1})"),
    "daly_interval_s": (
        [ANY, ANY],
        "CASE WHEN {0} < 2 * {1} THEN sqrt(2 * {0} * {1}) * (1 + sqrt({0} / (2 * {1})) / 3 "
        "+ {0} / (2 * {1}) / 9) - {0} ELSE {1} END",
    ),
    "checkpoint_waste_fraction": ([ANY, ANY, ANY, ANY], "{1} / {0} + {0} / (2 * {2}) + {3} / {2}"),
    "gpu_power_mw": ([COUNT, ANY], "{0} * {1} / 1e6"),
    "gpu_power_w": ([ANY, FRAC, ANY], "{2} + (0.9 * {0} - {2}) * {1}"),
    "pue_from_cooling_share": ([FRAC], "1 / (1 - {0})"),
    "facility_power_mw": ([ANY, ANY], "{0} * {1}"),
    "energy_kwh": ([ANY, ANY], "{0} * {1} / 3.6e6"),
    "annual_energy_cost": ([ANY, ANY], "{0} * 1000 * 8760 * {1}"),
    "carbon_kg": ([ANY, ANY], "{0} * {1} / 1000"),
    "perf_per_watt": ([ANY, ANY], "{0} / {1}"),
    "gpu_mtbf_h": ([ANY, COUNT, ANY], "{1} * {2} / {0}"),
    "cluster_mtbf_h": ([ANY, COUNT], "{0} / {1}"),
    "expected_interruptions": ([COUNT, ANY, ANY], "{0} * {1} / {2}"),
    "stranded_gpus": (
        ["(range % 9)", "8", "(range % 16 + 1)"],
        "CASE WHEN {2} <= {1} THEN {0} % {2} WHEN {0} < {1} THEN {0} ELSE 0 END",
    ),
    "scale_out_s": ([COUNT, ANY, COUNT], "ceil({0} / {2}) * {1}"),
    "billed_cost": (
        [ANY, ANY, "[0.001, 1, 3600][range % 3 + 1]::DOUBLE"],
        "ceil({0} / {2} * (1 - 1e-12)) * {2} * {1} / 3600",
    ),
    "training_flops": ([ANY, ANY], "6 * {0} * {1}"),
    "training_days": (
        [ANY, COUNT, ANY, "((range % 100 + 1) / 100)::DOUBLE"],
        "{0} / ({1} * {2} * 1e12 * {3}) / 86400",
    ),
    "implied_mfu": ([ANY, COUNT, ANY, ANY], "{0} / ({1} * {2} * 1e12 * {3} * 86400)"),
    "chinchilla_tokens": ([ANY], "20 * {0}"),
}


def side_by_side(con: duckdb.DuckDBPyConnection, *queries: str) -> list[tuple[float, object]]:
    """Median wall time of three runs of each query, interleaved so that load on the machine
    falls on all of them alike; with each query's result."""
    times: list[list[float]] = [[] for _ in queries]
    results: list[object] = [None for _ in queries]
    for _ in range(3):
        for i, query in enumerate(queries):
            start = time.perf_counter()
            results[i] = con.sql(query).fetchall()[0][0]
            times[i].append(time.perf_counter() - start)
    return [(statistics.median(t), r) for t, r in zip(times, results, strict=True)]


def total(expr: str, source: str, returns: str) -> str:
    value = f"length({expr})" if returns == "VARCHAR" else expr
    return f"SELECT sum({value}) FROM {source}"


def same(a: object, b: object) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--python-rows", type=int, default=2_000_000)
    parser.add_argument("--only", default="", help="comma-separated function names")
    args = parser.parse_args()
    con = duckdb.connect()
    registry.register(con)
    models = {m.name: m for m in registry.REGISTRY}
    missing = set(models) - set(CASES)
    if missing:
        sys.exit(f"no plain-SQL formula in bench for: {sorted(missing)}")
    only = {n for n in args.only.split(",") if n}
    threads = con.sql("SELECT current_setting('threads')").fetchall()[0][0]
    print(f"{args.rows:,} rows, {threads} threads, duckdb {duckdb.__version__}, median of 3")
    print("columns: arguments read from a table's columns (how model functions are used);")
    print(
        "range(): arguments computed inline from range() (each macro reference recomputes them)\n"
    )
    print(
        "| function | plain SQL s | wanka s | ratio | range(): plain s | wanka s | ratio | same |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|:-:|")
    ratios: list[float] = []
    for name, (inputs, plain) in CASES.items():
        if only and name not in only:
            continue
        returns = models[name].returns
        # constant arguments (a collective's name, 8 GPUs per node) stay literals
        columns = [f"a{i}" if "range" in expr else expr for i, expr in enumerate(inputs)]
        listed = ", ".join(
            f"{expr} AS {col}" for expr, col in zip(inputs, columns, strict=True) if expr != col
        )
        con.execute(f"CREATE OR REPLACE TEMP TABLE args AS SELECT {listed} FROM range({args.rows})")
        table = [
            total(plain.format(*columns), "args", returns),
            total(f"{name}({', '.join(columns)})", "args", returns),
        ]
        inline = [
            total(plain.format(*inputs), f"range({args.rows})", returns),
            total(f"{name}({', '.join(inputs)})", f"range({args.rows})", returns),
        ]
        (plain_s, expected), (wanka_s, got), (plain_r, expected_r), (wanka_r, got_r) = side_by_side(
            con, *table, *inline
        )
        con.execute("DROP TABLE args")
        ratios.append(wanka_s / plain_s)
        ok = same(got, expected) and same(got_r, expected_r) and same(got, got_r)
        mark = "yes" if ok else f"NO ({got} vs {expected})"
        print(
            f"| {name} | {plain_s:.3f} | {wanka_s:.3f} | {wanka_s / plain_s:.2f} "
            f"| {plain_r:.3f} | {wanka_r:.3f} | {wanka_r / plain_r:.2f} | {mark} |"
        )
    if ratios:
        print(f"\ncolumns ratio: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}")
    if not only or "gpu_power_w" in only:
        python_scale(con, args.python_rows)


def python_scale(con: duckdb.DuckDBPyConnection, rows: int) -> None:
    """gpu_power_w as SQL, as its macro, as a row-at-a-time and as an Arrow Python UDF."""
    model = next(m for m in registry.REGISTRY if m.name == "gpu_power_w")
    con.create_function(
        "gpu_power_w_row",
        lambda tdp, util, idle: idle + (0.9 * tdp - idle) * util,
        ["DOUBLE", "DOUBLE", "DOUBLE"],  # type: ignore[list-item]
        "DOUBLE",  # type: ignore[arg-type]
    )
    con.create_function(
        "gpu_power_w_arrow",
        registry.arrow_function(model),
        ["DOUBLE", "DOUBLE", "DOUBLE"],  # type: ignore[list-item]
        "DOUBLE",  # type: ignore[arg-type]
        type="arrow",
        null_handling="special",
    )
    inputs, plain = CASES["gpu_power_w"]
    labels = ("plain SQL", "macro", "row-at-a-time Python UDF", "Arrow UDF")
    queries = [total(plain.format(*inputs), f"range({rows})", "DOUBLE")] + [
        total(f"{fn}({', '.join(inputs)})", f"range({rows})", "DOUBLE")
        for fn in ("gpu_power_w", "gpu_power_w_row", "gpu_power_w_arrow")
    ]
    timed = side_by_side(con, *queries)
    base = timed[0][0]
    parts = [
        f"{label} {took:.3f} s ({took / base:.1f}×)"
        for label, (took, _) in zip(labels, timed, strict=True)
    ]
    print(f"\nfor scale, gpu_power_w over {rows:,} rows: " + "; ".join(parts))


if __name__ == "__main__":
    main()
