"""Catalog views and macros (placeholder)."""

from __future__ import annotations

from typing import Any

COMPAT_SCHEMA = "pg_compat"


def install(cur: Any) -> None:
    return None
