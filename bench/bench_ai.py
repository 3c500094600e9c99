"""AI functions beside plain SQL on the same rows, on one core: embed, rank, classify, cache hits.

Over N synthetic kernel log lines (templates of NVRM, mlx5, EXT4, MCE and Slurm lines with
varied ids, so nearly every line is distinct), in one process pinned to one CPU core with
DuckDB at one thread and the tokenizer at one thread:

- `ai_embed(line)` into a table (the embedded model; target >= 5,000 rows/s), beside plain
  SQL's md5(line) and lower(line) over the same rows;
- top-10 by `ai_similarity(v, 'query')` over the N embedded rows (target <= 200 ms), beside
  plain SQL's top-10 by length(line);
- `ai_classify(line, labels)` over the N rows;
- `ai_gen(line, model)` whose answers are all cached (target >= 1M rows/s): once with the
  answers in the table only (a new process), then from memory; a real local server stands
  behind the model and must see no request.

Median of 3 runs each, except the embedding (once: it fills the table the ranking reads).

    .venv/bin/python bench/bench_ai.py [--rows 100000]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # the tokenizer's threads: one core means one
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.warehouse.ai.endpoint import Endpoint
from warehouse.ai import cache
from warehouse.kernel.engine import Engine

TEMPLATES = (
    "NVRM: Xid (PCI:0000:{b:02x}:00): 79, pid={p}, name=python3, GPU has fallen off the bus.",
    "NVRM: Xid (PCI:0000:{b:02x}:00): 48, pid={p}, An uncorrectable double bit error (DBE) "
    "has been detected on GPU in the framebuffer at partition {n}",
    "NVRM: Xid (PCI:0000:{b:02x}:00): 119, pid={p}, name=nvidia-smi, Timeout after 6s of "
    "waiting for RPC response from GPU{n} GSP! Expected function 76 (GSP_RM_CONTROL)",
    "mlx5_core 0000:{b:02x}:00.0: mlx5_port_module_event: Port module event[error]: module {n}, "
    "Cable error, High Temperature",
    "mlx5_core 0000:{b:02x}:00.1: Link down on port {n} (pid {p})",
    "EXT4-fs error (device nvme{n}n1p2): ext4_find_entry:1455: inode #{p}: comm python: "
    "reading directory lblock 0",
    "mce: [Hardware Error]: CPU {n}: Machine Check: 0 Bank 5: be00000000800400 (pid {p})",
    "slurmd[{p}]: error: Node configuration differs from hardware: CPUs={n}:64(hw)",
    "NCCL WARN NET/IB : Got completion from peer 10.0.{n}.{b} with error 12, opcode {p}",
)
QUERY = "the GPU disappeared from the PCIe bus"
LABELS = "['Faulty GPU', 'GPU HBM3 Memory', 'NIC', 'SSD', 'CPU', 'Network Switch/Cable']"


def lines(rows: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(TEMPLATES).format(b=rng.randrange(256), p=rng.randrange(10**6), n=i % 997)
        for i in range(rows)
    ]


def timed(run: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    n = args.rows
    cpu = sorted(os.sched_getaffinity(0))[0]
    os.sched_setaffinity(0, {cpu})
    endpoint = Endpoint()
    results: list[tuple[str, str, float, str, str]] = []

    def add(what: str, face: str, seconds: float, per: str, target: str = "") -> None:
        results.append((what, face, seconds, per, target))

    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "bench.duckdb")
        texts = lines(n)
        with Engine(path) as eng:
            con = eng.con
            con.execute("SET threads = 1")
            con.execute("CREATE TABLE lines (i INTEGER, line VARCHAR)")
            con.execute(
                "INSERT INTO lines SELECT * FROM (SELECT unnest(range(?)) AS i, unnest(?) AS line)",
                [n, texts],
            )
            distinct = con.execute("SELECT count(DISTINCT line) FROM lines").fetchall()[0][0]

            s = timed(lambda: con.execute("SELECT sum(length(md5(line))) FROM lines").fetchall())
            add("md5(line)", "plain SQL", s, f"{n / s:,.0f} rows/s")
            s = timed(lambda: con.execute("SELECT sum(length(lower(line))) FROM lines").fetchall())
            add("lower(line)", "plain SQL", s, f"{n / s:,.0f} rows/s")

            con.execute("SELECT ai_embed('warm the model up')").fetchall()
            began = time.perf_counter()
            con.execute("CREATE TABLE vectors AS SELECT i, line, ai_embed(line) AS v FROM lines")
            s = time.perf_counter() - began
            add("ai_embed(line) into a table", "AI", s, f"{n / s:,.0f} rows/s", ">= 5,000 rows/s")

            top = "SELECT i, ai_similarity(v, ?) AS s FROM vectors ORDER BY s DESC LIMIT 10"
            s = timed(lambda: con.execute(top, [QUERY]).fetchall(), 5)
            add("top-10 by ai_similarity(v, query)", "AI", s, f"{s * 1000:,.1f} ms", "<= 200 ms")
            plain_top = "SELECT i, length(line) AS s FROM lines ORDER BY s DESC LIMIT 10"
            s = timed(lambda: con.execute(plain_top).fetchall(), 5)
            add("top-10 by length(line)", "plain SQL", s, f"{s * 1000:,.1f} ms")

            classify = f"SELECT count(ai_classify(line, {LABELS})) FROM lines"
            s = timed(lambda: con.execute(classify).fetchall(), 1)
            add("ai_classify(line, 6 labels)", "AI", s, f"{n / s:,.0f} rows/s")

            con.execute(
                "INSERT INTO wanka.ai_models (name, task, endpoint, model, call_budget) "
                "VALUES ('bench', 'chat', ?, 'tiny', 0)",
                [f"{endpoint.url}/ok/v1"],
            )
            keys = [cache.input_sha256("gen", "{}", t) for t in dict.fromkeys(texts)]
            con.execute(
                "INSERT INTO wanka.ai_cache (model, model_version, input_sha256, output) "
                "SELECT 'bench', '1', unnest(?::VARCHAR[]), 'cached answer'",
                [keys],
            )
        # a new Engine: the answers are in the table only; call_budget 0 refuses any request
        gen = "SELECT count(ai_gen(line, 'bench')) FROM lines"
        with Engine(path) as eng:
            eng.con.execute("SET threads = 1")
            began = time.perf_counter()
            eng.con.execute(gen).fetchall()
            s = time.perf_counter() - began
            add("ai_gen, answers in wanka.ai_cache", "AI", s, f"{n / s:,.0f} rows/s")
            s = timed(lambda: eng.con.execute(gen).fetchall())
            add("ai_gen, answers in memory", "AI", s, f"{n / s:,.0f} rows/s", ">= 1M rows/s")
        assert endpoint.requests == [], "a cached row was sent"
    endpoint.close()

    print(
        f"# AI functions over {n:,} kernel log lines ({distinct:,} distinct), one core (CPU {cpu})"
    )
    print()
    print("| measure | side | seconds | figure | target |")
    print("|---|---|---:|---:|---|")
    for what, face, seconds, per, target in results:
        print(f"| {what} | {face} | {seconds:.3f} | {per} | {target} |")
    print()
    print(f"requests the model's server saw for cached rows: {len(endpoint.requests)}")


if __name__ == "__main__":
    main()
