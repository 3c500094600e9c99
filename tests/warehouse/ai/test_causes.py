"""The shipped domain: kernel log lines read, free text filed under interruption causes (XIDs by
join, the rest by nearest labelled example), its accuracy on public text, semantic search."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.warehouses import Warehouses
from warehouse.analyses import run_analysis_table
from warehouse.ingest import ingest
from warehouse.ingest.base import ReadOptions
from warehouse.ingest.kernel_log import parse_line
from warehouse.kernel.engine import Engine

LOG = "\n".join(
    [
        "Dec 11 13:23:01 gpu-node-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
        "name=python3, GPU has fallen off the bus.",
        "Dec 11 13:23:02 gpu-node-07 kernel: NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
        "2024-12-11T13:25:00+0000 gpu-node-08 kernel: EXT4-fs error (device nvme0n1p2): "
        "ext4_find_entry:1455: inode #2: reading directory lblock 0",
        "[Wed Dec 11 13:26:00 2024] NVRM: Xid (PCI:0000:5d:00): 48, pid=77, name=train, "
        "An uncorrectable double bit error (DBE) has been detected on GPU",
        "[ 8812.402114] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
        "not a kernel line at all",
    ]
)


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Engine]:
    folder = tmp_path_factory.mktemp("causes")
    path = warehouses.empty(folder / "w.duckdb")
    log = folder / "kern.log"
    log.write_text(LOG)
    with Engine(str(path)) as engine:
        ingest(engine, "kernel-log", [str(log)], ReadOptions(at=datetime(2024, 12, 12, tzinfo=UTC)))
        engine.con.execute(
            "INSERT INTO job_events (job_id, ts, event, detail) VALUES "
            "('j1', TIMESTAMPTZ '2024-12-11 14:00:00', 'failure', "
            "'NCCL watchdog timeout: collective operation hung and was aborted'), "
            "('j2', TIMESTAMPTZ '2024-12-11 15:00:00', 'failure', 'rank 3 died: Xid 94 on gpu 2')"
        )
        yield engine


def table(eng: Engine, name: str, given: dict[str, str] | None = None) -> list[dict[str, Any]]:
    cur = eng.cursor()
    try:
        rows: list[dict[str, Any]] = run_analysis_table(cur, name, given).to_pylist()
        return rows
    finally:
        cur.close()


def test_kernel_lines_of_each_format_are_read_and_the_rest_rejected(eng: Engine) -> None:
    rows = eng.con.execute(
        "SELECT host, xid, pci, ts IS NULL FROM kernel_messages ORDER BY message"
    ).fetchall()
    assert sorted((r[1], r[0], r[2]) for r in rows if r[1] is not None) == [
        (48, None, "0000:5d:00"),
        (79, "gpu-node-07", "0000:3b:00"),
    ]
    assert len(rows) == 5 and sum(1 for r in rows if r[3]) == 1  # dmesg uptime: no wall time
    rejects = eng.con.execute("SELECT line, reason FROM wanka.ingest_rejects").fetchall()
    assert rejects == [(6, "not a kernel log line (dmesg, journalctl -k, syslog)")]


def test_a_syslog_line_takes_the_year_given() -> None:
    row = parse_line("Jan  2 03:04:05 n1 kernel: hello", 2023, None)
    assert row is not None and row["ts"] == datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_xids_are_joined_and_only_the_rest_go_to_the_model(eng: Engine) -> None:
    rows = {r["text"][:30]: r for r in table(eng, "interruption_text_causes")}
    xid79 = rows["NVRM: Xid (PCI:0000:3b:00): 79"]
    assert (xid79["cause"], xid79["how"]) == ("Faulty GPU", "xid")
    assert rows["NVRM: Xid (PCI:0000:5d:00): 48"]["cause"] == "GPU HBM3 Memory"
    job = rows["rank 3 died: Xid 94 on gpu 2"]
    assert (job["xid"], job["cause"], job["how"]) == (94, "GPU HBM3 Memory", "xid")
    fell = rows["NVRM: GPU 0000:3b:00.0: GPU ha"]
    assert (fell["cause"], fell["how"]) == ("Faulty GPU", "nearest example")
    assert rows["EXT4-fs error (device nvme0n1p"]["cause"] == "SSD"
    assert rows["NCCL watchdog timeout: collect"]["cause"] == "NCCL Watchdog Timeouts"
    assert not any(text.startswith("usb 1-1") for text in rows)  # no hardware named
    causes = {r[0] for r in eng.con.execute("SELECT cause FROM interruption_causes").fetchall()}
    assert {r["cause"] for r in rows.values()} <= causes


def test_accuracy_on_public_text_beats_the_commonest_cause(eng: Engine) -> None:
    rows = {r["source"]: r for r in table(eng, "interruption_text_accuracy")}
    everything = rows["all"]
    assert everything["texts"] >= 140
    # measured 0.841 against 0.614 (docs/ai.md); a drop below 0.8 is a regression
    assert everything["accuracy"] >= 0.8 > everything["baseline_accuracy"] + 0.15
    assert (
        rows["stepfun-ai/InfiniteHBD-Trace"]["accuracy"]
        > 2 * (rows["stepfun-ai/InfiniteHBD-Trace"]["baseline_accuracy"])
    )


def test_semantic_search_finds_the_meaning_not_the_words(eng: Engine) -> None:
    rows = table(eng, "text_search", {"query": "graphics card vanished from PCIe", "k": "5"})
    assert len(rows) == 5
    # the query never says "GPU", the texts it finds do
    assert sum("GPU" in r["text"] for r in rows) >= 4
    assert not any("vanished" in r["text"] or "graphics" in r["text"].lower() for r in rows)
    assert [r["similarity"] for r in rows] == sorted((r["similarity"] for r in rows), reverse=True)


def test_the_labelled_set_cites_a_source_for_every_text(eng: Engine) -> None:
    missing = eng.con.execute(
        "SELECT count(*) FROM interruption_texts WHERE source NOT LIKE '%@%(%)%' "
        "OR cause NOT IN (SELECT cause FROM interruption_causes)"
    ).fetchall()[0][0]
    assert missing == 0
    readme = Path(__file__).parents[3] / "sql" / "reference" / "interruption_texts.md"
    assert "Apache-2.0" in readme.read_text()
