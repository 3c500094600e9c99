"""Errors the protocol layer raises itself; `service.serve.pgerror` words all the others."""

from __future__ import annotations


class SqlError(Exception):
    """An error the protocol layer raises itself, with its SQLSTATE."""

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.sqlstate = code
