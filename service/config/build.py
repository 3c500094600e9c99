"""`ServeSettings` from `wanka.yml` and the flags of `wanka serve`: a flag given on the command
line overrides the file, the file overrides the defaults (docs/configuration.md).

`load(file, flags)` reads and checks the whole file first (service/config/spec.py: errors name
the file, line and key), so a bad file changes nothing, at start or at a reload.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from service.config import spec
from service.config.schema import SHAPE
from service.serve.settings import (
    FeedSettings,
    Limits,
    LogSettings,
    RuleSettings,
    ScrapeJob,
    ServeSettings,
    Tls,
)

#: What neither the file nor a flag sets: the settings' own defaults.
_BASE = ServeSettings(None)
_LOG = LogSettings()
_JOB = ScrapeJob()  # wanka scrapes every 15 s by default, with a 10 s timeout
_RULES = RuleSettings()


def load(file: Path | None, flags: Mapping[str, Any], db: str | None = None) -> ServeSettings:
    """The settings of `file` (None: no file) under `flags`, the options of `wanka serve`
    given on its command line (by their parameter names; `db` for the global `--db`);
    ConfigError naming what is wrong."""
    raw: dict[str, Any] = spec.read(file, SHAPE) if file is not None else {}
    return build(raw, flags, db=db, config_file=None if file is None else str(file))


def build(
    raw: Mapping[str, Any],
    flags: Mapping[str, Any],
    *,
    db: str | None = None,
    config_file: str | None = None,
) -> ServeSettings:
    """Settings from a read file (`raw`, as `SHAPE` gives it) and the flags over it."""
    listen = raw.get("listen", {})
    host, port = listen.get("http", (_BASE.host, _BASE.port))
    pg = listen.get("postgres", ("", _BASE.pg_port))  # None: off
    pg_host = pg[0] if pg and pg[0] else None  # None: the HTTP host
    pg_port = pg[1] if pg else None
    if "pg_port" in flags:
        pg_port = flags["pg_port"] or None
    log = raw.get("log", {})
    return ServeSettings(
        flags.get("db", db if db is not None else _str(raw.get("db"))),
        host=flags.get("http_host", host),
        port=flags.get("http_port", port),
        pg_port=pg_port,
        pg_host=pg_host,
        tls=_tls(raw, flags),
        limits=_limits(raw, flags),
        refresh_interval_s=_refresh(raw, flags),
        feeds=_feeds(raw, flags),
        log=LogSettings(
            level=flags.get("log_level", log.get("level", _LOG.level)),
            format=flags.get("log_format", log.get("format", _LOG.format)),
            requests=bool(flags.get("access_log", log.get("requests", False))),
        ),
        external_labels=tuple(sorted(raw.get("global", {}).get("external_labels", {}).items())),
        retention=tuple(sorted(raw.get("retention", {}).items())),
        shutdown_grace_s=raw.get("shutdown", {}).get("grace_period", _BASE.shutdown_grace_s),
        config_file=config_file,
        rules=_rules(raw, flags),
        promql_cache_s=_promql_cache(raw, flags),
    )


def _promql_cache(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> float | None:
    """The PromQL result cache's offset in seconds; None (`off`, or a flag of 0): no cache."""
    if "promql_cache_offset" in flags:
        return flags["promql_cache_offset"] or None
    offset = raw.get("promql", {}).get("cache_offset", _BASE.promql_cache_s)
    return offset or None


def _rules(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> RuleSettings:
    """`rule_files` (and each --rule-file) read now, all or nothing; the Alertmanagers of
    `alerting.alertmanagers` as base URLs."""
    from warehouse.rules.manager import load_groups
    from warehouse.rules.rulefile import RuleFileError

    files = tuple(str(f) for f in raw.get("rule_files", [])) + tuple(
        str(f) for f in flags.get("rule_file", ())
    )
    try:
        groups = tuple(load_groups(files))
    except RuleFileError as error:
        raise spec.ConfigError(f"rule_files: {error}") from None
    alertmanagers: list[str] = []
    timeout = _RULES.alertmanager_timeout_s
    for given in raw.get("alerting", {}).get("alertmanagers", []):
        scheme, prefix = given.get("scheme", "http"), given.get("path_prefix", "").strip("/")
        timeout = given.get("timeout", timeout)
        for group in given.get("static_configs", []):
            for target in group.get("targets", []):
                alertmanagers.append(f"{scheme}://{target}" + (f"/{prefix}" if prefix else ""))
    evaluation = raw.get("global", {})
    return RuleSettings(
        files=files,
        groups=groups,
        evaluation_interval_s=evaluation.get("evaluation_interval", _RULES.evaluation_interval_s),
        query_offset_s=flags.get(
            "rule_query_offset", evaluation.get("rule_query_offset", _RULES.query_offset_s)
        ),
        alertmanagers=tuple(alertmanagers),
        alertmanager_timeout_s=timeout,
        external_url=flags.get("external_url", _RULES.external_url),
    )


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def _tls(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> Tls | None:
    cert = flags.get("tls_cert", raw.get("tls", {}).get("cert_file"))
    key = flags.get("tls_key", raw.get("tls", {}).get("key_file"))
    if (cert is None) != (key is None):
        raise spec.ConfigError("a TLS certificate and its key go together: give both")
    return Tls(Path(cert), Path(key)) if cert is not None and key is not None else None


def _limits(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> Limits:
    given = raw.get("limits", {})
    base = Limits()
    memory = raw.get("memory_limit")
    return Limits(
        timeout_s=flags.get("timeout_s", given.get("query_timeout", base.timeout_s)),
        max_rows_json=flags.get("max_rows_json", given.get("max_rows_json", base.max_rows_json)),
        max_rows=flags.get("max_rows", given.get("max_rows", base.max_rows)),
        memory_limit=flags.get("memory_limit", None if memory is None else f"{memory}B"),
        max_upload_bytes=given.get("max_upload_size", base.max_upload_bytes),
        max_connections_per_user=given.get(
            "max_connections_per_user", base.max_connections_per_user
        ),
        max_connections=given.get("max_connections", base.max_connections),
        startup_timeout_s=given.get("startup_timeout", base.startup_timeout_s),
    )


def _refresh(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> float | None:
    every = flags.get(
        "refresh_interval_s",
        raw.get("scheduler", {}).get("refresh_interval", _BASE.refresh_interval_s),
    )
    return float(every) or None


def _feeds(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> FeedSettings:
    slurm = raw.get("slurm", {})
    sacct = flags.get("sacct_interval", slurm.get("sacct_interval"))
    return FeedSettings(
        scrape_jobs=_scrape_jobs(raw, flags),
        sacct_interval_s=sacct or None,
        sacct_command=flags.get(
            "sacct_command", slurm.get("sacct_command", _BASE.feeds.sacct_command)
        ),
        scontrol_command=flags.get("scontrol_command", slurm.get("scontrol_command")),
    )


def _scrape_jobs(raw: Mapping[str, Any], flags: Mapping[str, Any]) -> tuple[ScrapeJob, ...]:
    """The file's scrape configs; `--scrape-config FILE` (a file_sd file) replaces them with
    one job. `--scrape-interval` and `--scrape-timeout` stand for the global defaults."""
    defaults = raw.get("global", {})
    interval = flags.get("scrape_interval", defaults.get("scrape_interval", _JOB.interval_s))
    timeout = flags.get("scrape_timeout", defaults.get("scrape_timeout", _JOB.timeout_s))
    if "scrape_config" in flags:
        if flags["scrape_config"] is None:
            return ()
        name = flags.get("scrape_job", _JOB.name)
        given = {"job_name": name, "file_sd_configs": [{"files": [flags["scrape_config"]]}]}
        return (_job(given, interval, timeout),)
    return tuple(_job(c, interval, timeout) for c in raw.get("scrape_configs", []))


def _job(given: Mapping[str, Any], interval: float, timeout: float) -> ScrapeJob:
    every = given.get("scrape_interval", interval)
    wait = given.get("scrape_timeout", min(timeout, every))
    return ScrapeJob(
        name=given["job_name"],
        interval_s=every,
        timeout_s=wait,
        metrics_path=given.get("metrics_path", _JOB.metrics_path),
        scheme=given.get("scheme", _JOB.scheme),
        params=tuple((k, v[0]) for k, v in sorted(given.get("params", {}).items()) if v),
        static=tuple(
            (tuple(group.get("targets", [])), tuple(sorted(group.get("labels", {}).items())))
            for group in given.get("static_configs", [])
        ),
        files=tuple(str(f) for sd in given.get("file_sd_configs", []) for f in sd.get("files", [])),
        headers=_auth(given),
    )


def _auth(given: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The Authorization header of a scrape config's basic_auth or authorization."""
    if "basic_auth" in given:
        basic = given["basic_auth"]
        secret = basic.get("password_file") or basic.get("password_env")
        pair = f"{basic['username']}:{secret.value if secret else ''}"
        return (("Authorization", "Basic " + base64.b64encode(pair.encode()).decode()),)
    if "authorization" in given:
        auth = given["authorization"]
        secret = auth.get("credentials_file") or auth.get("credentials_env")
        return (("Authorization", f"{auth.get('type', 'Bearer')} {secret.value}"),)
    return ()
