"""What the serve process runs with, as one typed, frozen value.

`wanka serve` builds a `ServeSettings` from its options and hands it to `run_server`;
`Server.apply` hands a new one to each part of the server (limits, the scheduler's interval,
the feeds), which is where a reloaded configuration takes effect. Being frozen, two settings
compare by value: a part restarts only when what it reads changed.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.serve.session import DEFAULT_TIMEOUT_S
from warehouse.errors import UserError


@dataclass(frozen=True)
class Limits:
    """What one query may take. Requests may lower these, never raise them."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_rows_json: int = 100_000  # JSON is for people and small tools: capped by default
    max_rows: int | None = None  # every other format: uncapped unless configured
    memory_limit: str | None = None  # DuckDB's memory_limit for the instance, e.g. '8GB'
    max_upload_bytes: int = 1 << 30  # one ingest request body
    max_connections_per_user: int = 64  # pgwire connections one user may hold at once
    max_connections: int = 256  # pgwire connections in all (each holds a thread)
    startup_timeout_s: float = 30.0  # pgwire: to finish startup and login (slowloris guard)


@dataclass(frozen=True)
class Tls:
    """A certificate chain and its private key (PEM files), for HTTPS and pgwire's SSL."""

    cert: Path
    key: Path

    def context(self) -> ssl.SSLContext:
        """A server-side context: TLS 1.2 or newer, the chain and key loaded (errors named)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as error:
            raise UserError(
                f"cannot use --tls-cert {self.cert} with --tls-key {self.key}: {error}"
            ) from None
        return context


@dataclass(frozen=True)
class ScrapeJob:
    """One `scrape_configs` entry, as Prometheus reads it: its targets listed (`static_configs`)
    and in file_sd files (`file_sd_configs`, reread when they change), how often and how to
    scrape them. `headers` carries the Authorization read from a secret file: never printed."""

    name: str = "dcgm"
    interval_s: float = 15.0
    timeout_s: float = 10.0
    metrics_path: str = "/metrics"
    scheme: str = "http"
    params: tuple[tuple[str, str], ...] = ()
    #: Each static target group: its host:port targets and its labels.
    static: tuple[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], ...] = ()
    #: The file_sd files (a `*` in the file name matches as in Prometheus).
    files: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class FeedSettings:
    """The live feeds to run (service/serve/feeds.py): none unless targets or an interval are
    given."""

    scrape_jobs: tuple[ScrapeJob, ...] = ()
    sacct_interval_s: float | None = None  # poll Slurm this often
    sacct_command: str = "sacct"
    scontrol_command: str | None = None  # None: scontrol when on PATH


@dataclass(frozen=True)
class LogSettings:
    """How the process logs: `logfmt` or `json`, one event a line, at `level`; each request
    at debug level (or always, with `requests`)."""

    level: str = "info"
    format: str = "logfmt"
    requests: bool = False


@dataclass(frozen=True)
class RuleSettings:
    """Prometheus rule files to evaluate and the Alertmanagers to tell (service/serve/rules.py);
    the groups are read when the settings are built, so a bad file stops a start or a reload
    before anything changes."""

    files: tuple[str, ...] = ()
    groups: tuple[Any, ...] = ()  # warehouse.rules.rulefile.Group, read from `files`
    evaluation_interval_s: float = 60.0  # a group without its own interval (Prometheus: 1m)
    #: Evaluate at t - offset: remote-written samples arrive seconds after their time
    #: (Prometheus 2.53's `global.rule_query_offset`; 2.42 has none, i.e. 0s).
    query_offset_s: float = 10.0
    alertmanagers: tuple[str, ...] = ()  # base URLs (scheme://host:port/path_prefix)
    alertmanager_timeout_s: float = 10.0
    external_url: str = ""  # alerts' generatorURL starts with it (default: the HTTP address)


@dataclass(frozen=True)
class ServeSettings:
    """Everything `wanka serve` was asked for: where to listen, with what limits, what to run."""

    db: str | None
    host: str = "127.0.0.1"
    port: int = 8080  # HTTP
    pg_port: int | None = 5433  # None: no PostgreSQL wire endpoint
    tls: Tls | None = None
    limits: Limits = field(default_factory=Limits)
    refresh_interval_s: float | None = 10.0  # the scheduler's pass; None: no scheduler
    feeds: FeedSettings = field(default_factory=FeedSettings)
    pg_host: str | None = None  # None: the HTTP host
    log: LogSettings = field(default_factory=LogSettings)
    #: Labels naming this wanka to other systems (alerts sent to Alertmanager carry them).
    external_labels: tuple[tuple[str, str], ...] = ()
    #: Retention rules set at start and at each reload: (table, seconds kept; None: off).
    retention: tuple[tuple[str, float | None], ...] = ()
    #: How long SIGTERM waits for what is in flight before cancelling it.
    shutdown_grace_s: float = 30.0
    #: The configuration file read (None: flags only): what SIGHUP and /-/reload reread.
    config_file: str | None = None
    rules: RuleSettings = field(default_factory=RuleSettings)
    #: PromQL range answers keep their steps older than this many seconds, for the next query
    #: of the same panel (warehouse/promql/result_cache.py); None: none kept.
    promql_cache_s: float | None = 300.0

    @property
    def pg_bind(self) -> str:
        return self.pg_host if self.pg_host is not None else self.host
