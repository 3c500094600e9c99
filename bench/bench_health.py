"""Does `wanka health` find the faults it should, at the size it is for? Two simulated runs of
the same cluster, one with injected faults (warehouse/simulate/faults.py) and one without.

Run: `.venv/bin/python bench/bench_health.py [--gpus 10000] [--hours 24] [--faults 20]`.

Each run: `--gpus` GPUs for `--hours` of 60 s scrapes, no background fatal XIDs (the clean
background the faults are injected on; the background's corrected ECC errors stay), nccl-tests
probe sweeps every 15 minutes; loaded as an ingest would (one transaction per telemetry batch,
gpu_events noted in it), the gpu_windows dynamic table refreshed, then every rule's findings
scored against the truth (warehouse/health/evaluate.py): per fault kind precision, recall within 5
windows and the delay, the confusion table, and on the run without faults the share of GPUs
flagged. Also the time to load, refresh, find and report.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from warehouse.health import evaluate
from warehouse.health import findings as health
from warehouse.kernel.engine import Engine
from warehouse.simulate import SimConfig, simulate_cluster


def run(cfg: SimConfig, folder: Path) -> evaluate.Score:
    started = time.perf_counter()
    cluster = simulate_cluster(cfg)
    built = time.perf_counter()
    with Engine(str(folder / f"faults-{cfg.faults}.duckdb")) as engine:
        samples = evaluate.load(engine, cluster)
        loaded = time.perf_counter()
        cur = engine.cursor()
        findings = health.findings(cur)
        found = time.perf_counter()
        report = health.report(cur)
        reported = time.perf_counter()
        windows = cur.execute("SELECT count(*) FROM gpu_windows").fetchone()
        cur.close()
    scored = evaluate.score(
        findings, evaluate.truth(cluster), cluster.telemetry.columns,
        interval_s=cluster.config.interval_s,
    )  # fmt: skip
    print(f"\n### {cfg.gpus:,} GPUs x {cfg.hours:g} h, {cfg.faults} faults of each kind\n")
    print(f"{samples:,} samples, {windows[0] if windows else 0:,} gpu_windows rows, "
          f"{len(findings):,} findings; simulate {built - started:.1f} s, load + refresh "
          f"{loaded - built:.1f} s, findings {found - loaded:.2f} s, report "
          f"{reported - found:.2f} s ({report['counts']['gpus']})")  # fmt: skip
    print("\n```")
    print(evaluate.render(scored))
    print("```")
    return scored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--faults", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wanka-health-") as tmp:
        for faults in (args.faults, 0):
            cfg = SimConfig(
                gpus=args.gpus, hours=args.hours, seed=args.seed, faults=faults,
                fatal_xid_per_gpu_h=0.0, nccl_probe_s=900.0, warmup_hours=24.0,
            )  # fmt: skip
            run(cfg, Path(tmp))


if __name__ == "__main__":
    main()
