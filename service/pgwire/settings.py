"""Session settings a PostgreSQL client sets and reads: kept in the session, never sent to DuckDB.

`SET`, `RESET`, `SHOW`, `set_config()` and `current_setting()` of client settings (DateStyle,
extra_float_digits, application_name, search_path, TimeZone, ...) are answered here; DuckDB's own
configuration stays locked. Values that change how results are printed are accepted and kept but
wanka always prints ISO dates, UTC timestamps and shortest-exact floats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from warehouse.query import search_path

SERVER_VERSION = "15.0"
SERVER_VERSION_NUM = "150000"

#: reported in ParameterStatus at startup and when SET changes them
REPORTED = (
    "server_version",
    "server_encoding",
    "client_encoding",
    "application_name",
    "DateStyle",
    "IntervalStyle",
    "TimeZone",
    "integer_datetimes",
    "standard_conforming_strings",
    "is_superuser",
    "session_authorization",
    "default_transaction_read_only",
    "in_hot_standby",
)

DEFAULTS: dict[str, str] = {
    "server_version": SERVER_VERSION,
    "server_version_num": SERVER_VERSION_NUM,
    "server_encoding": "UTF8",
    "client_encoding": "UTF8",
    "application_name": "",
    "DateStyle": "ISO, MDY",
    "IntervalStyle": "postgres",
    "TimeZone": "UTC",
    "integer_datetimes": "on",
    "standard_conforming_strings": "on",
    "is_superuser": "off",
    "session_authorization": "",
    "default_transaction_read_only": "off",
    "in_hot_standby": "off",
    "extra_float_digits": "1",
    "search_path": '"$user", public',
    "statement_timeout": "0",
    "lock_timeout": "0",
    "idle_in_transaction_session_timeout": "0",
    "transaction_isolation": "serializable",
    "default_transaction_isolation": "serializable",
    "transaction_read_only": "off",
    "max_identifier_length": "63",
    "bytea_output": "hex",
    "client_min_messages": "notice",
    "lc_collate": "C.UTF-8",
    "lc_ctype": "C.UTF-8",
    "lc_messages": "C.UTF-8",
    "lc_monetary": "C.UTF-8",
    "lc_numeric": "C.UTF-8",
    "lc_time": "C.UTF-8",
    "max_connections": "100",
    "block_size": "8192",
    "row_security": "on",
    "synchronous_commit": "on",
    "jit": "off",
    "default_table_access_method": "heap",
    "max_index_keys": "32",
    "datestyle": "ISO, MDY",
}

_ALIASES = {
    "transaction isolation level": "transaction_isolation",
    "session characteristics as transaction isolation level": "default_transaction_isolation",
    "time zone": "TimeZone",
    "names": "client_encoding",
    "session authorization": "session_authorization",
    "schema": "search_path",
}

_SET = re.compile(
    r"^\s*set\s+(?:(session|local)\s+)?(?P<name>.+?)\s*(?:=|\bto\b)\s*(?P<value>.*?)\s*;?\s*$",
    re.I | re.S,
)
_SET_MULTIWORD = re.compile(
    r"^\s*set\s+(?:(session|local)\s+)?(?P<name>time zone|names|transaction isolation level|"
    r"session characteristics as transaction isolation level|session authorization|transaction|"
    r"schema)"
    r"\s+(?P<value>.*?)\s*;?\s*$",
    re.I | re.S,
)
_SHOW = re.compile(r"^\s*show\s+(?P<name>.+?)\s*;?\s*$", re.I | re.S)
_RESET = re.compile(r"^\s*reset\s+(?P<name>.+?)\s*;?\s*$", re.I | re.S)


def canonical(name: str) -> str:
    """A setting's name as it is stored (case-insensitive like PostgreSQL)."""
    lowered = " ".join(name.strip().strip('"').split()).lower()
    if lowered in _ALIASES:
        return _ALIASES[lowered]
    for known in DEFAULTS:
        if known.lower() == lowered:
            return known
    return lowered


def _unquote(value: str) -> str:
    value = value.strip()
    if value.lower() == "default":
        return ""
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


@dataclass
class Settings:
    """One session's settings."""

    values: dict[str, str] = field(default_factory=lambda: dict(DEFAULTS))

    def get(self, name: str) -> str | None:
        return self.values.get(canonical(name))

    def set(self, name: str, value: str) -> str:
        key = canonical(name)
        if key == "datestyle":
            key = "DateStyle"
        self.values[key] = value if value != "" else DEFAULTS.get(key, "")
        return key

    def reset(self, name: str) -> None:
        key = canonical(name)
        if key == "all":
            self.values = dict(DEFAULTS)
        elif key in DEFAULTS:
            self.values[key] = DEFAULTS[key]
        else:
            self.values.pop(key, None)


@dataclass(frozen=True)
class SessionCommand:
    """A SET/SHOW/RESET the session answers itself."""

    verb: str  # 'set' | 'show' | 'reset'
    name: str
    value: str = ""


def session_command(sql: str) -> SessionCommand | None:
    """Recognise a SET, SHOW or RESET of a client setting.

    >>> session_command("SET extra_float_digits = 3")
    SessionCommand(verb='set', name='extra_float_digits', value='3')
    >>> session_command("show transaction isolation level").name
    'transaction_isolation'
    >>> session_command("SET TIME ZONE 'UTC'").value
    'UTC'
    >>> session_command("SHOW TABLES") is None
    True
    """
    head = sql.lstrip().split(None, 1)[0].lower() if sql.strip() else ""
    if head == "set":
        match = _SET_MULTIWORD.match(sql) or _SET.match(sql)
        if not match:
            return None
        name = canonical(match["name"])
        if name == "transaction":  # SET TRANSACTION ISOLATION LEVEL ... / READ ONLY
            return SessionCommand("set", "transaction_isolation", match["value"])
        if name == "search_path" and match["value"].strip().lower() != "default":
            value = search_path.show(search_path.parse_path(match["value"]))
        elif name == "DateStyle":
            value = ", ".join(_unquote(v) for v in match["value"].split(","))
        else:
            value = _unquote(match["value"])
        return SessionCommand("set", name, value)
    if head == "show":
        match = _SHOW.match(sql)
        if not match:
            return None
        name = canonical(match["name"])
        if name in DEFAULTS or name == "all" or "." in name:
            return SessionCommand("show", name)
        return None
    if head == "reset":
        match = _RESET.match(sql)
        return SessionCommand("reset", canonical(match["name"])) if match else None
    return None
