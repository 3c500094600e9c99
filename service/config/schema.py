"""The keys of `wanka.yml`, the file `wanka serve --config` reads (docs/configuration.md shows
each with its default; deploy/wanka.yml is a commented example).

Scrape configs are written as Prometheus writes them (`global`, `scrape_configs` with
`static_configs` and `file_sd_configs`), the parts of them wanka runs; a key Prometheus has and
wanka does not run (`relabel_configs`, `kubernetes_sd_configs`, ...) is an error, never ignored.
A secret is never written in the file: `password_file` and `credentials_file` name a file that
holds it, and `password_env` and `credentials_env` an environment variable.
"""

from __future__ import annotations

from typing import Any

from yaml.nodes import Node

from service.config.spec import (
    ListOf,
    MapOf,
    Section,
    Spot,
    address,
    boolean,
    choice,
    duration,
    integer,
    labels,
    optional,
    path,
    readable_file,
    secret_env,
    secret_file,
    size,
    text,
)


def _keep(node: Node, spot: Spot) -> float | None:
    """A retention: a duration (`14d`), or `off` (every row kept)."""
    if getattr(node, "value", None) in ("off", False):
        return None
    return duration(node, spot)


_INLINE = "a secret is not written in the file: give {0}_file (a file holding it) or {0}_env"

BASIC_AUTH = Section(
    {"username": text, "password_file": secret_file, "password_env": secret_env},
    refuse={"password": _INLINE.format("password")},
    required=("username",),
    exclusive=((("password_file", "password_env"), "give password_file or password_env"),),
)
AUTHORIZATION = Section(
    {"type": text, "credentials_file": secret_file, "credentials_env": secret_env},
    refuse={"credentials": _INLINE.format("credentials")},
    exclusive=(
        (("credentials_file", "credentials_env"), "give credentials_file or credentials_env"),
    ),
    check=lambda found: (
        None
        if "credentials_file" in found or "credentials_env" in found
        else "give credentials_file or credentials_env"
    ),
)


def _timeout_within(found: dict[str, Any]) -> str | None:
    """Prometheus's check: a scrape may not last longer than its interval."""
    every, wait = found.get("scrape_interval"), found.get("scrape_timeout")
    if every is not None and wait is not None and wait > every:
        return f"scrape_timeout ({wait:g} s) is longer than scrape_interval ({every:g} s)"
    return None


STATIC = Section({"targets": ListOf(text), "labels": labels})
FILE_SD = Section({"files": ListOf(path), "refresh_interval": duration})
SCRAPE = Section(
    {
        "job_name": text,
        "scrape_interval": duration,
        "scrape_timeout": duration,
        "metrics_path": text,
        "scheme": choice("http", "https"),
        "params": MapOf(ListOf(text)),
        "basic_auth": BASIC_AUTH,
        "authorization": AUTHORIZATION,
        "static_configs": ListOf(STATIC),
        "file_sd_configs": ListOf(FILE_SD),
    },
    required=("job_name",),
    check=_timeout_within,
    exclusive=((("basic_auth", "authorization"), "give basic_auth or authorization, not both"),),
    refuse={
        "bearer_token": "a secret is not written in the file: give authorization's "
        "credentials_file or credentials_env"
    },
)
ALERTMANAGER = Section(
    {
        "static_configs": ListOf(Section({"targets": ListOf(text)})),
        "scheme": choice("http", "https"),
        "path_prefix": text,
        "timeout": duration,
        "api_version": choice("v2"),
    },
    required=("static_configs",),
)
SHAPE = Section(
    {
        "db": path,
        "listen": Section({"http": address, "postgres": optional(address)}),
        "tls": Section(
            {"cert_file": readable_file, "key_file": readable_file},
            required=("cert_file", "key_file"),
        ),
        "limits": Section(
            {
                "query_timeout": duration,
                "max_rows_json": integer(min=1),
                "max_rows": optional(integer(min=1)),
                "max_upload_size": size,
                "max_connections": integer(min=1),
                "max_connections_per_user": integer(min=1),
                "startup_timeout": duration,
            }
        ),
        "memory_limit": size,
        "scheduler": Section({"refresh_interval": duration}),
        "global": Section(
            {
                "scrape_interval": duration,
                "scrape_timeout": duration,
                "external_labels": labels,
                "evaluation_interval": duration,
                "rule_query_offset": duration,
            },
            check=_timeout_within,
        ),
        "rule_files": ListOf(path),  # Prometheus 2.42 rule files; a `*` globs as in Prometheus
        "alerting": Section({"alertmanagers": ListOf(ALERTMANAGER)}),
        "scrape_configs": ListOf(SCRAPE, unique="job_name"),
        "slurm": Section(
            {"sacct_interval": duration, "sacct_command": text, "scontrol_command": text}
        ),
        "retention": MapOf(_keep),  # table names to how long their rows are kept
        "log": Section(
            {
                "level": choice("debug", "info", "warning", "error"),
                "format": choice("logfmt", "json"),
                "requests": boolean,
            }
        ),
        "shutdown": Section({"grace_period": duration}),
        # a range answer's steps older than cache_offset are kept for the next query (`off`)
        "promql": Section({"cache_offset": _keep}),
    }
)
