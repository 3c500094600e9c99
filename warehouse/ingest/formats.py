"""Every ingest format, registered by importing its module (each calls `base.register`)."""

from __future__ import annotations

from warehouse.ingest import tabular  # noqa: F401
