"""How `wanka serve` logs: one event a line on stderr, as logfmt (the default, what Prometheus
and Alertmanager write) or JSON, at the configured level; the level changes at a reload.

    ts=2026-12-06T10:00:00.123Z level=info logger=wanka.feeds msg="scrape config reread"

Fields given in `extra=` come after `msg`; an exception comes as `err` (its text) and `trace`
(its traceback on the same line). HTTP requests are logged at debug level, or always with
`log.requests` (uvicorn's access log, its query strings' secret-looking values blanked).
Nothing logged carries a password or token: credentials never reach a log call, and configured
secrets print as `<secret>` (service/config/spec.py).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

from service.serve.settings import LogSettings

#: The LogRecord attributes every record has: anything else was given in `extra=`.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
_STANDARD |= {"color_message"}  # uvicorn's message with terminal colours
_BARE = re.compile(r"[^\s=\"]+")
_SECRET_PARAM = re.compile(
    r"([?&](?:[^=&]*(?:password|passwd|token|secret|key|credential)[^=&]*)=)[^&\s\"]*",
    re.IGNORECASE,
)
#: The loggers that write through wanka's handler (uvicorn's own are re-routed here).
ROOTS = ("wanka", "uvicorn", "uvicorn.error", "uvicorn.access")


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """A record as ordered fields: ts, level, logger, msg, its extras, err and trace."""
    found: dict[str, Any] = {
        "ts": datetime.fromtimestamp(record.created, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z"),
        "level": record.levelname.lower().replace("warning", "warn"),
        "logger": record.name,
        "msg": _blank_secrets(record.getMessage()),
    }
    found.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
    if record.exc_info and record.exc_info[1] is not None:
        found["err"] = str(record.exc_info[1]) or type(record.exc_info[1]).__name__
        found["trace"] = logging.Formatter().formatException(record.exc_info)
    return found


def _blank_secrets(text: str) -> str:
    """`text` with the values of secret-looking query parameters blanked.

    >>> _blank_secrets("GET /v1/x?a=1&api_token=abc&b=2 HTTP/1.1")
    'GET /v1/x?a=1&api_token=<secret>&b=2 HTTP/1.1'
    """
    return _SECRET_PARAM.sub(r"\1<secret>", text)


class Logfmt(logging.Formatter):
    """key=value pairs, values quoted where they hold spaces, quotes or `=`."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_logfmt_value(v)}" for k, v in fields(record).items())


def _logfmt_value(value: Any) -> str:
    """
    >>> _logfmt_value("a b"), _logfmt_value(3), _logfmt_value('say "hi"\\nnow')
    ('"a b"', '3', '"say \\\\"hi\\\\"\\\\nnow"')
    """
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if text and _BARE.fullmatch(text):
        return text
    return json.dumps(text)


class Json(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(fields(record), default=str)


_HANDLER = logging.StreamHandler(sys.stderr)


def configure(settings: LogSettings) -> None:
    """Log as `settings` says from now on (at start, and again at each reload)."""
    _HANDLER.setFormatter(Json() if settings.format == "json" else Logfmt())
    level = getattr(logging, settings.level.upper())
    for name in ROOTS:
        logger = logging.getLogger(name)
        logger.handlers = [_HANDLER] if name in ("wanka", "uvicorn") else []
        logger.propagate = name not in ("wanka", "uvicorn")
        logger.setLevel(level)
    # requests at debug level (or always when asked): uvicorn writes them at info
    access = logging.getLogger("uvicorn.access")
    access.setLevel(logging.DEBUG if settings.requests or level <= logging.DEBUG else logging.WARN)
    if _AT_DEBUG not in access.filters:
        access.addFilter(_AT_DEBUG)


def _at_debug(record: logging.LogRecord) -> bool:
    """A request's record, relabelled debug (uvicorn logs it at info)."""
    record.levelno, record.levelname = logging.DEBUG, "DEBUG"
    return True


_AT_DEBUG = _at_debug
