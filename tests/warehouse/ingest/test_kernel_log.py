"""The kernel log reader: each format's line, the XID parsed out, what is not a kernel line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from warehouse.ingest.kernel_log import parse_line

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."


@pytest.mark.parametrize(
    ("line", "ts", "host"),
    [
        (f"[Wed Dec 11 13:23:01 2024] {XID}", datetime(2024, 12, 11, 13, 23, 1, tzinfo=UTC), None),
        (f"Dec 11 13:23:01 n7 kernel: {XID}", datetime(2023, 12, 11, 13, 23, 1, tzinfo=UTC), "n7"),
        (
            f"2024-12-11T13:23:01+0100 n7 kernel: [ 88.1] {XID}",
            datetime(2024, 12, 11, 12, 23, 1, tzinfo=UTC),
            "n7",
        ),
        (f"[ 8812.402114] {XID}", None, None),
    ],
)
def test_each_format_gives_time_host_and_the_xid(
    line: str, ts: datetime | None, host: str | None
) -> None:
    row = parse_line(line, 2023, None)
    assert row is not None
    assert row["ts"] == ts and row["host"] == host
    assert (row["message"], row["xid"], row["pci"]) == (XID, 79, "0000:3b:00")


def test_a_line_without_an_xid_keeps_its_text_and_no_code() -> None:
    row = parse_line("Dec 11 13:23:01 n7 kernel: mlx5_core 0000:17:00.0: link down", 2024, None)
    assert row is not None and row["xid"] is None and row["message"].startswith("mlx5_core")


@pytest.mark.parametrize("line", ["", "hello", "Dec 11 13:23:01 n7 sshd[1]: accepted key"])
def test_other_lines_are_not_kernel_lines(line: str) -> None:
    assert parse_line(line, 2024, None) is None
