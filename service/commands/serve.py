"""`wanka serve`: the one process that owns the database while HTTP, pgwire and the refresh
scheduler share it."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from service.commands.common import Duration
from service.config import build
from service.config.reload import Reloader
from service.pgwire import Handle, start
from service.serve import lifecycle, logs, memory
from service.serve.server import Server
from service.serve.settings import ServeSettings
from warehouse.errors import UserError


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine.

    >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(
                ipaddress.ip_address(info[4][0]).is_loopback
                for info in socket.getaddrinfo(host, None)
            )
        except OSError:
            return False


def _start_pgwire(server: Server, settings: ServeSettings, port: int) -> Handle:
    tls = settings.tls.context() if settings.tls else None
    handle = start(server, settings.pg_bind, port, tls=tls)
    mode = "require" if tls else "disable"
    click.echo(f"PostgreSQL wire:  postgresql://{settings.pg_bind}:{port}/wanka?sslmode={mode}")
    return handle


def run_server(
    settings: ServeSettings,
    *,
    banner: Callable[[str], None] | None = None,
    reload_flags: dict[str, Any] | None = None,
) -> None:
    """Serve `settings.db` until SIGTERM or SIGINT, then close everything in order.

    HTTP listens first and answers `/-/ready` 503 while the database opens and migrates and
    the parts start (service/serve/lifecycle.py). `banner(url)` prints what a person needs to
    reach it (the demo's reader) once it serves. With `settings.config_file`, SIGHUP and
    `POST /-/reload` reread it under `reload_flags`."""
    from service.http import create_app

    logs.configure(settings.log)
    if settings.tls is not None:
        settings.tls.context()  # a wrong certificate or key fails here, before anything listens
    memory.limit_arenas()  # before the threads start: see service/serve/memory.py
    memory.use_jemalloc_for_arrow()
    trimmer = memory.Trimmer().start()
    app = create_app(None, pgwire=bool(settings.pg_port))
    try:
        lifecycle.serve_http(
            app, settings, lambda: _open(app, settings, banner, reload_flags or {})
        )
    finally:
        trimmer.stop()


def _open(
    app: Any,
    settings: ServeSettings,
    banner: Callable[[str], None] | None,
    reload_flags: dict[str, Any],
) -> lifecycle.Opened:
    """Open the database and start everything that serves it; what to close at the stop."""
    server = Server(settings.db, limits=settings.limits)
    pg = None
    try:
        host = settings.host
        users_exist = server.any_users()
        local = is_loopback(host)
        if not local and not users_exist:
            raise UserError(
                f"binding to {host} (not loopback) needs users: add one first with "
                "`wanka user add NAME --role reader --password-stdin`"
            )
        if settings.tls is None and not local:
            click.echo(
                f"warning: serving {host} without TLS: passwords and results cross the network "
                "in clear text; give --tls-cert and --tls-key",
                err=True,
            )
        pg = _start_pgwire(server, settings, settings.pg_port) if settings.pg_port else None
        app.state.open_locally = local and not users_exist
        if settings.config_file is not None or settings.rules.files:
            # with --rule-file alone, a reload rereads the rule files (under the same flags)
            file = Path(settings.config_file) if settings.config_file is not None else None
            app.state.reloader = Reloader(server, file, reload_flags)
        server.start(settings)  # the scheduler, then the live feeds
    except BaseException:
        if pg is not None:
            pg.stop()
        server.close()
        raise
    for line in server.feeds.describe():
        click.echo(line)
    url = f"{'https' if settings.tls else 'http'}://{host}:{settings.port}"
    click.echo(f"HTTP:             {url}  (OpenAPI: {url}/docs)")
    if not users_exist:
        click.echo(
            "no users yet: local callers act as admin without credentials; "
            "add users with `wanka user add`"
        )
    if banner is not None:
        banner(url)
    app.state.server = server  # from here, the faces serve (the start-up gate opens)
    return lifecycle.Opened(server, pg, getattr(app.state, "reloader", None))


@click.command()
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="wanka.yml: every setting below and more (docs/configuration.md); a flag overrides it.",
)
@click.option("--http-host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--http-port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--pg-port",
    default=5433,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="PostgreSQL wire port (0: off).",
)
@click.option("--timeout-s", default=60.0, show_default=True, help="Time limit of one query.")
@click.option(
    "--max-rows-json", default=100_000, show_default=True, help="Row cap of JSON results."
)
@click.option("--max-rows", type=int, help="Row cap of every other format [default: none].")
@click.option("--memory-limit", help="DuckDB memory limit, e.g. 8GB [default: DuckDB's].")
@click.option(
    "--refresh-interval-s",
    default=10.0,
    show_default=True,
    help="How often the scheduler looks for due dynamic tables (0: never).",
)
@click.option("--access-log", is_flag=True, help="Log each request (never credentials).")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
@click.option(
    "--log-format", type=click.Choice(["logfmt", "json"]), default="logfmt", show_default=True
)
@click.option(
    "--tls-cert",
    type=click.Path(dir_okay=False, path_type=Path),
    help="PEM certificate chain: HTTPS, and SSL for PostgreSQL clients.",
)
@click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path), help="Its PEM key.")
@click.option(
    "--scrape-config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Prometheus file_sd targets (JSON or YAML) to scrape; reread when it changes.",
)
@click.option("--scrape-interval", type=Duration(), default="15s", show_default=True)
@click.option("--scrape-timeout", type=Duration(), default="10s", show_default=True)
@click.option("--scrape-job", default="dcgm", show_default=True, help="`job` label of targets.")
@click.option("--sacct-interval", type=Duration(), help="Poll Slurm's sacct this often (e.g. 60s).")
@click.option(
    "--sacct-command", default="sacct", show_default=True, help="The sacct to run (with arguments)."
)
@click.option(
    "--scontrol-command",
    help="Also poll `CMD show job -d --oneliner` (GPU indices) [default: scontrol when on PATH].",
)
@click.option(
    "--rule-file",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="A Prometheus rule file to evaluate (repeatable; beside the file's rule_files).",
)
@click.option(
    "--rule-query-offset",
    type=Duration(),
    help="Evaluate rules this long before now: late remote-written samples [default: 10s].",
)
@click.option(
    "--promql-cache-offset",
    type=Duration(),
    help="Keep range answers' steps older than this for the next query of the same panel "
    "(0: keep none) [default: 5m].",
)
@click.option(
    "--external-url",
    help="The URL alerts link back to (generatorURL) [default: http://HOST:PORT].",
)
@click.pass_context
def serve(ctx: click.Context, /, config_file: Path | None, **options: Any) -> None:
    """Serve the warehouse: HTTP, PostgreSQL wire and the refresh scheduler in one process,
    with live feeds when asked (scraping, Slurm polling). With --config, the file's settings
    (a flag given here overrides it); SIGHUP or POST /-/reload rereads it."""
    flags = given_flags(ctx, options)
    if ctx.obj.db is not None:
        flags["db"] = ctx.obj.db  # `wanka --db PATH serve`: over the file's `db`, at reloads too
    settings = build.load(config_file, flags)
    run_server(settings, reload_flags=flags)


def given_flags(ctx: click.Context, options: dict[str, Any]) -> dict[str, Any]:
    """The options given on the command line (or by the environment), by name: those override
    the configuration file; the others are defaults the file may change."""
    given = {}
    for name, value in options.items():
        source = ctx.get_parameter_source(name)
        if source in (
            click.core.ParameterSource.COMMANDLINE,
            click.core.ParameterSource.ENVIRONMENT,
        ):
            given[name] = value
    if (given.get("tls_cert") is None) != (given.get("tls_key") is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    return given
