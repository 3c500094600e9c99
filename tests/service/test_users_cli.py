"""`wanka user` and `wanka token`: what the CLI stores and refuses."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.conftest import invoke_wanka

pytestmark = pytest.mark.slow  # five CLI processes


def test_user_add_list_and_token(cli_db: Path) -> None:
    db = str(cli_db)
    added = invoke_wanka(
        "--db", db, "user", "add", "ann", "--role", "writer", "--password-stdin", input="pw1\n"
    )
    assert added.returncode == 0, added.stderr
    assert "ann (writer)" in added.stdout
    listed = invoke_wanka("--db", db, "user", "list")
    assert listed.stdout.split() == ["ann", "writer"]
    token = invoke_wanka("--db", db, "token", "create", "--user", "ann")
    assert token.returncode == 0 and token.stdout.startswith("wk_")
    con = duckdb.connect(db, read_only=True)
    try:
        stored = repr(con.execute("SELECT * FROM wanka.users").fetchall())
        tokens = repr(con.execute("SELECT * FROM wanka.tokens").fetchall())
    finally:
        con.close()
    assert "pw1" not in stored and token.stdout.strip() not in tokens


def test_refusals_exit_2(cli_db: Path) -> None:
    db = str(cli_db)
    empty = invoke_wanka(
        "--db", db, "user", "add", "ann", "--role", "reader", "--password-stdin", input="\n"
    )
    assert empty.returncode == 2 and "password is empty" in empty.stderr
    role = invoke_wanka(
        "--db", db, "user", "add", "ann", "--role", "root", "--password-stdin", input="x\n"
    )
    assert role.returncode == 2
    nobody = invoke_wanka("--db", db, "token", "create", "--user", "nobody")
    assert nobody.returncode == 2 and "no user named" in nobody.stderr
