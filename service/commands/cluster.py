"""`wanka simulate` and `wanka demo`: a synthetic cluster in files, or loaded and ready."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from service import terminal
from service.commands.common import open_engine, parse_time, shared_data, with_options
from warehouse.errors import UserError

if TYPE_CHECKING:
    from warehouse.kernel.engine import Engine
    from warehouse.simulate import SimConfig


def _parse_start(value: str | None) -> datetime:
    """--start, else the start of this hour (UTC)."""
    given = parse_time("--start", value)
    return given or datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


def _simulation_options(command: Callable[..., None]) -> Callable[..., None]:
    """Options shared by `simulate` and `demo`: the shape of the simulated cluster."""
    options = [
        click.option(
            "--gpus",
            type=click.IntRange(min=8),
            default=10_000,
            show_default=True,
            help="GPUs in the cluster (8 per host).",
        ),
        click.option(
            "--hours",
            type=click.FloatRange(min=0, min_open=True),
            default=1.0,
            show_default=True,
            help="Hours of telemetry.",
        ),
        click.option(
            "--interval-s",
            type=click.FloatRange(min=0, min_open=True),
            default=60.0,
            show_default=True,
            help="Seconds between samples.",
        ),
        click.option(
            "--seed",
            type=int,
            default=0,
            show_default=True,
            help="Random seed: same seed, same cluster.",
        ),
        click.option(
            "--job-labels",
            type=click.Choice(["hpc", "kubernetes", "none"]),
            default="hpc",
            show_default=True,
            help="How telemetry names jobs: hpc (dcgm-exporter's hpc_job on Slurm GPUs, pod "
            "labels on Kubernetes), kubernetes (pod labels only), none (no job labels).",
        ),
        click.option(
            "--faults",
            type=click.IntRange(min=0),
            default=2,
            show_default=True,
            help="Faults of each kind to inject (a GPU slower than its job's peers, corrected "
            "ECC errors climbing to an XID, a hot GPU, a silent host, a bad NIC), for `wanka "
            "health` to find; `simulate` writes their truth to truth/faults.csv.",
        ),
        click.option(
            "--nccl-probe-s",
            type=click.FloatRange(min=0),
            default=900.0,
            show_default=True,
            help="Seconds between nccl-tests probe sweeps (each host in a 2-node all_reduce with "
            "two neighbours), written as nccl_results; 0 for none.",
        ),
    ]
    return with_options(command, options)


def _sim_config(
    gpus: int,
    hours: float,
    interval_s: float,
    start: datetime,
    seed: int,
    warmup_hours: float,
    job_labels: str,
    faults: int = 0,
    nccl_probe_s: float = 0.0,
) -> SimConfig:
    from warehouse.simulate import SimConfig

    try:
        return SimConfig(
            gpus=gpus,
            hours=hours,
            interval_s=interval_s,
            start=start,
            seed=seed,
            warmup_hours=warmup_hours,
            job_labels=job_labels,
            faults=faults,
            nccl_probe_s=nccl_probe_s,
        )
    except ValueError as error:
        raise UserError(str(error)) from None


@click.command()
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write the files to.",
)
@_simulation_options
@click.option("--start", metavar="ISO", help="When telemetry starts [default: this hour, UTC].")
@click.option(
    "--warmup-hours",
    type=click.FloatRange(min=0),
    default=48.0,
    show_default=True,
    help="Hours of job history before the telemetry starts.",
)
@click.option(
    "--fleet-days",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="Also write this many days of the fleet's failure history from --start: fault tickets, "
    "their XIDs and precursors as DCGM text, truth/failures.csv (0: none).",
)
@click.option(
    "--precursor-share",
    type=click.FloatRange(0, 1),
    default=0.25,
    show_default=True,
    help="--fleet-days: share of failures with a precursor (XID 79/119 never have one).",
)
@click.option(
    "--refault-7d",
    type=click.FloatRange(0, 1, max_open=True),
    default=0.30,
    show_default=True,
    help="--fleet-days: chance a repaired node fails again within 7 days (lemon servers).",
)
@click.option(
    "--sbe-bursts",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="--fleet-days: harmless bursts of corrected ECC errors per 1,000 GPU-days.",
)
def simulate(
    out: Path,
    gpus: int,
    hours: float,
    interval_s: float,
    seed: int,
    job_labels: str,
    faults: int,
    nccl_probe_s: float,
    start: str | None,
    warmup_hours: float,
    fleet_days: float,
    precursor_share: float,
    refault_7d: float,
    sbe_bursts: float,
) -> None:
    """Write a synthetic cluster in the real formats (DCGM text, sacct, scontrol, inventory CSV,
    Parquet) and its ground truth (which job held which GPU, and what its GPUs reported); with
    --fleet-days, also the fleet's failure history at Llama 3's rate (warehouse/simulate/
    failures.py: failures mostly without warning, harmless ECC bursts, lemon servers)."""
    from warehouse.simulate import simulate_cluster, write_formats

    start_at = _parse_start(start)
    config = _sim_config(
        gpus, hours, interval_s, start_at, seed, warmup_hours, job_labels, faults, nccl_probe_s
    )
    cluster = simulate_cluster(config)
    with terminal.progress("writing", cluster.sample_count, cumulative=True) as done:
        files = write_formats(cluster, out, progress=done)
    count = sum(len(paths) for paths in files.values())
    print(
        f"wrote {count} files to {out}: {cluster.nodes.num_rows:,} hosts, "
        f"{cluster.jobs.num_rows:,} jobs, {cluster.sample_count:,} telemetry samples"
    )
    if fleet_days > 0:
        from warehouse.simulate.failures import FleetConfig, draw_fleet, write_fleet

        fleet = draw_fleet(
            FleetConfig(
                gpus=gpus, days=fleet_days, start=config.start, seed=seed,
                precursor_share=precursor_share, refault_7d=refault_7d,
                sbe_bursts_per_1k_gpu_days=sbe_bursts,
            )
        )  # fmt: skip
        write_fleet(fleet, out, cluster.nodes.column("host").to_pylist())
        warned = sum(f.precursor for f in fleet.failures)
        print(
            f"fleet history: {len(fleet.failures):,} failures over {fleet_days:g} days "
            f"({warned:,} with a precursor) in faults/tickets.csv and dcgm/fleet_events.prom"
        )


@click.command()
@click.option("--no-serve", is_flag=True, help="Stop after building.")
@click.option("--rebuild", is_flag=True, help="Build again even if this demo is already built.")
@click.option(
    "--real-data",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of real public samples to add [default: $WANKA_SHARED_DATA, else ../shared/data].",
)
@_simulation_options
@click.pass_context
def demo(
    ctx: click.Context,
    no_serve: bool,
    rebuild: bool,
    real_data: Path | None,
    gpus: int,
    hours: float,
    interval_s: float,
    seed: int,
    job_labels: str,
    faults: int,
    nccl_probe_s: float,
) -> None:
    """Build a demo warehouse of a simulated 10,000-GPU cluster, then serve it."""
    from warehouse.demo import DEMO_START, EXAMPLE_QUERIES, build_demo

    # A fixed start, so that running the same demo again finds it already built.
    config = _sim_config(
        gpus, hours, interval_s, DEMO_START, seed, 48.0, job_labels, faults, nccl_probe_s
    )
    demo_password = None
    with open_engine(ctx) as engine:
        if not no_serve:
            demo_password = _demo_reader(engine)
        with terminal.progress("loading telemetry", None) as advance:
            summary = build_demo(
                engine,
                config,
                rebuild=rebuild,
                real_data=real_data or shared_data(),
                progress=advance,
            )
        path = engine.path
    if summary.rebuilt:
        print(
            f"built the demo warehouse in {summary.seconds:.1f} s from {summary.batches} ingest "
            f"batches: {path}"
        )
        if summary.real_samples:
            print(f"  with the real public samples in {summary.real_samples}")
    else:
        print(f"the demo warehouse is already built: {path} (--rebuild builds it again)")
    for table, rows in summary.rows.items():
        print(f"  {table:<12} {rows:>12,} rows")
    print("\nTry:")
    for title, query in EXAMPLE_QUERIES.items():
        flat = " ".join(query.split())
        print(f'  # {title}\n  wanka --db {path} sql "{flat}"\n')
    if not no_serve:
        _serve_demo(path, demo_password)


DEMO_USER = "demo"


def _demo_reader(engine: Engine) -> str:
    """(Re)create the demo reader with a fresh random password; returns the password."""
    import secrets

    from warehouse.security.users import add_user

    password = secrets.token_urlsafe(12)
    cur = engine.cursor()
    try:
        add_user(cur, DEMO_USER, "reader", password)
    finally:
        cur.close()
    return password


def _serve_demo(path: str, password: str | None) -> None:
    """Serve the demo warehouse, printing how to reach it as the demo reader."""
    from service.commands.serve import run_server
    from service.serve.settings import ServeSettings

    def banner(url: str) -> None:
        body = '{"sql": "SELECT gpu_model, sum(gpus) AS gpus FROM nodes GROUP BY ALL"}'
        print(f"demo reader:      user {DEMO_USER}, password {password}")
        print(
            f"try:              curl -s -u {DEMO_USER}:{password} "
            f"-H 'content-type: application/json' -d '{body}' {url}/v1/query"
        )
        print("stop with Ctrl-C")

    run_server(ServeSettings(path), banner=banner)
