"""`wanka`: the command line. Thin: parse arguments, call the warehouse, render the result."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click
import duckdb

from service import render, terminal
from warehouse.engine import Engine
from warehouse.errors import UserError, WankaError
from warehouse.query import execute, one_line, sql_error

if TYPE_CHECKING:
    from warehouse.simulate import SimConfig


@click.group(
    name="wanka",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--db",
    metavar="PATH",
    help="Database file [default: $WANKA_DB, else ./wanka.duckdb].",
)
@click.pass_context
def app(ctx: click.Context, db: str | None) -> None:
    """A SQL warehouse for GPU clusters of thousands to tens of thousands of cards."""
    ctx.obj = Globals(db=db)


@dataclass
class Globals:
    db: str | None


def _open(ctx: click.Context, *, read_only: bool = False) -> Engine:
    return Engine(ctx.obj.db, read_only=read_only)


@app.command()
@click.argument("query")
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(render.FORMATS),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to FILE instead of stdout.",
)
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Rows shown by --format table.",
)
@click.pass_context
def sql(ctx: click.Context, query: str, fmt: str, output: Path | None, max_rows: int) -> None:
    """Run SQL against the warehouse and print the result. QUERY '-' reads it from stdin."""
    text = sys.stdin.read() if query == "-" else query
    if fmt in render.BINARY_FORMATS and output is None and sys.stdout.isatty():
        raise UserError(f"--format {fmt} is binary: pass --output FILE or pipe it")
    with _open(ctx) as engine:
        cur = engine.cursor()
        reader = execute(cur, text)
        try:
            if fmt == "table" and output is None:
                terminal.print_table(reader, max_rows=max_rows)
                return
            writer = render.WRITERS["csv" if fmt == "table" else fmt]
            if output is None:
                writer(reader, sys.stdout.buffer)
                sys.stdout.buffer.flush()
            else:
                with _create(output) as handle:
                    writer(reader, handle)
        except duckdb.Error as error:  # raised while streaming rows
            raise sql_error(error) from None
        finally:
            reader.close()
            cur.close()


def _create(path: Path) -> IO[bytes]:
    try:
        return path.open("wb")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror}") from None


def _shared_data() -> Path:
    """`$WANKA_SHARED_DATA`, else the shared/data folder beside this checkout."""
    found = os.environ.get("WANKA_SHARED_DATA")
    return Path(found) if found else Path(__file__).resolve().parents[2] / "shared" / "data"


def _parse_start(value: str | None) -> datetime:
    if value is None:
        now = datetime.now(UTC)
        return now.replace(minute=0, second=0, microsecond=0)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"--start {value!r} is not an ISO 8601 time like 2026-11-01T00:00:00Z"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


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
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _sim_config(
    gpus: int, hours: float, interval_s: float, start: datetime, seed: int, warmup_hours: float
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
        )
    except ValueError as error:
        raise UserError(str(error)) from None


@app.command()
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
def simulate(
    out: Path,
    gpus: int,
    hours: float,
    interval_s: float,
    seed: int,
    start: str | None,
    warmup_hours: float,
) -> None:
    """Write a synthetic cluster in the real formats (DCGM text, sacct, inventory CSV, Parquet)."""
    from warehouse.simulate import simulate_cluster, write_formats

    config = _sim_config(gpus, hours, interval_s, _parse_start(start), seed, warmup_hours)
    cluster = simulate_cluster(config)
    with terminal.progress("writing", cluster.sample_count, cumulative=True) as done:
        files = write_formats(cluster, out, progress=done)
    count = sum(len(paths) for paths in files.values())
    print(
        f"wrote {count} files to {out}: {cluster.nodes.num_rows:,} hosts, "
        f"{cluster.jobs.num_rows:,} jobs, {cluster.sample_count:,} telemetry samples"
    )


@app.command()
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
) -> None:
    """Build a demo warehouse of a simulated 10,000-GPU cluster, then serve it."""
    from warehouse.demo import DEMO_START, EXAMPLE_QUERIES, build_demo

    # A fixed start, so that running the same demo again finds it already built.
    config = _sim_config(gpus, hours, interval_s, DEMO_START, seed, 48.0)
    with _open(ctx) as engine:
        with terminal.progress("loading telemetry", None) as advance:
            summary = build_demo(
                engine,
                config,
                rebuild=rebuild,
                real_data=real_data or _shared_data(),
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
        print("(serving over HTTP and PostgreSQL arrives with `wanka serve`; stopping after build)")


def _parse_time(option: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UserError(
            f"{option} {value!r} is not an ISO 8601 time like 2026-11-01T00:00:00Z"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@app.command()
@click.argument("fmt", metavar="FORMAT")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--force", is_flag=True, help="Ingest again content that was ingested before.")
@click.option("--at", metavar="ISO", help="dcgm: scrape time of every sample.")
@click.option("--host", help="Host name when the input carries none (nvidia-smi).")
@click.option("--cluster", help="Cluster the rows belong to when the input does not say.")
@click.option(
    "--columns", metavar="A,B,...", help="sacct/nvidia-smi: field names of output without a header."
)
@click.option(
    "--trace-start",
    metavar="ISO",
    help="pods: wall-clock time the trace's relative times count from.",
)
@click.option("--table", help="csv/parquet (and inventory): the table to load into.")
@click.option(
    "--tz", "timezone", default="UTC", show_default=True, help="Zone of times written without one."
)
@click.option("--collective", help="nccl-tests: the collective, when the file name does not say.")
@click.pass_context
def ingest(
    ctx: click.Context,
    fmt: str,
    paths: tuple[str, ...],
    force: bool,
    at: str | None,
    host: str | None,
    cluster: str | None,
    columns: str | None,
    trace_start: str | None,
    table: str | None,
    timezone: str,
    collective: str | None,
) -> None:
    """Read FORMAT files (a file, a folder, or - for stdin) into the warehouse.

    FORMAT is one of dcgm, nvidia-smi, sacct, pods, nccl-tests, inventory, parquet, csv. Each
    file is one batch and one transaction; the same content twice is a no-op (--force to redo).
    """
    from warehouse.ingest import ReadOptions
    from warehouse.ingest import ingest as run_ingest

    options = ReadOptions(
        at=_parse_time("--at", at),
        host=host,
        cluster=cluster,
        columns=tuple(c.strip() for c in columns.split(",")) if columns else None,
        trace_start=_parse_time("--trace-start", trace_start),
        table=table,
        timezone=timezone,
        collective=collective,
    )
    with _open(ctx) as engine, terminal.progress(f"ingesting {fmt}", None) as advance:
        results = run_ingest(engine, fmt, list(paths), options, force=force, progress=advance)
    for result in results:
        if result.duplicate_of is not None:
            print(
                f"{result.source}: already ingested as batch {result.duplicate_of} "
                f"(same content); --force loads it again"
            )
            continue
        loaded = ", ".join(f"{t} {n:,} rows" for t, n in sorted(result.rows.items())) or "no rows"
        print(
            f"batch {result.batch_id}: {result.source}: {loaded}, {result.rejected:,} rejected "
            f"({result.seconds:.2f} s)"
        )
        if result.first_reject is not None:
            first = result.first_reject
            where = f"line {first.line}: " if first.line else ""
            print(
                f"wanka: warning: {result.source}: {result.rejected:,} lines rejected, kept in "
                f"wanka.ingest_rejects (batch_id = {result.batch_id}); "
                f"first: {where}{first.reason}",
                file=sys.stderr,
            )


def main() -> None:
    """Console entry point: exit 0 on success, 2 on bad usage or input, 1 otherwise."""
    try:
        code = app(standalone_mode=False)
    except click.UsageError as error:
        _fail(one_line(error.format_message()), 2, hint=error.ctx)
    except click.ClickException as error:
        _fail(one_line(error.format_message()), error.exit_code)
    except click.Abort:
        _fail("aborted", 130)
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(130)
    except WankaError as error:
        _fail(str(error), error.exit_code)
    except duckdb.Error as error:
        _fail(str(sql_error(error)), sql_error(error).exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int, hint: click.Context | None = None) -> None:
    usage = f" (see '{hint.command_path} --help')" if hint is not None else ""
    print(f"wanka: error: {message}{usage}", file=sys.stderr)
    sys.exit(code)
