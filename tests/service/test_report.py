"""`wanka report`: writes the page; says which analyses a bare warehouse cannot answer."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import invoke_wanka


def test_report_on_a_fresh_warehouse_writes_what_it_can(cli_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    # a fresh warehouse gets the shipped dynamic tables from its first command; one dropped
    # is not made again, and the analyses that read it say so
    dropped = invoke_wanka("--db", str(cli_db), "sql", "DROP DYNAMIC TABLE gpu_hourly_host")
    assert dropped.returncode == 0, dropped.stderr
    done = invoke_wanka("--db", str(cli_db), "report", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out} (")
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<figure" in page  # perf_per_watt: specs only
    assert "Not available in this warehouse: Catalog Error: Table with name gpu_hourly_host" in page


def test_report_to_a_folder_that_is_not_there_exits_2(cli_db: Path, tmp_path: Path) -> None:
    done = invoke_wanka("--db", str(cli_db), "report", "--out", str(tmp_path / "no" / "r.html"))
    assert done.returncode == 2
    assert done.stderr.startswith("wanka: error: cannot write ")
