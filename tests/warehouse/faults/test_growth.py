"""Growth against a GPU's own history: corrected ECC errors, NVLink errors and PCIe replays
count by how far the last growth_recent_h hours outrun the trailing days' rate, read from real
DCGM fields (crafted dcgm-exporter text), and the backtest computes the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.warehouse.faults.test_node_risk import dcgm_text, shipped
from tests.warehouses import Warehouses
from warehouse.dynamic.refresh import refresh
from warehouse.faults.backtest import Signals, load_settings, scores_at
from warehouse.health import risk
from warehouse.ingest import ingest


def test_pcie_replays_from_dcgm_text_are_a_growth_term(
    warehouses: Warehouses, tmp_path: Path
) -> None:
    increases = [("gpu001", 3, 20 + i / 100, "pcie_replay") for i in range(10)]
    with shipped(warehouses) as eng:
        ingest(eng, "dcgm", [dcgm_text(tmp_path, "d.prom", increases, {})])
        cur = eng.cursor()
        risk.refresh(cur)
        refresh(cur, "gpu_risk")
        events = cur.execute(
            "SELECT host, gpu, count(*) FROM gpu_events WHERE kind = 'pcie_replay' GROUP BY ALL"
        ).fetchall()
        kinds = cur.execute("SELECT DISTINCT kind, gpu FROM node_signals").fetchall()
        [node] = cur.execute(
            "SELECT pcie_replay_recent, pcie_replay_growth, growth, score, precursors "
            "FROM node_risk WHERE node = 'gpu001'"
        ).fetchall()
        [gpu] = cur.execute(
            "SELECT gpu, pcie_replay_growth, growth, score FROM gpu_risk WHERE node = 'gpu001'"
        ).fetchall()
        cur.execute("UPDATE risk_settings SET value = 0.5 WHERE name = 'watch_score'")
        risk.refresh(cur)
        shown = "\n".join(risk.render(risk.summary(cur)))
        cur.close()
    assert events == [("gpu001", 3, 10)]
    assert kinds == [("pcie_replay", 3)]
    # 10 replays against no history: (10 − 0) / (0 + 5 pseudo-increases) = 2, weight 0.2
    assert node[:3] == (10, pytest.approx(2.0), pytest.approx(0.4))
    assert node[4] == 10
    assert gpu == (3, pytest.approx(2.0), pytest.approx(0.4), pytest.approx(0.4))
    # `wanka health` shows the term and its evidence
    assert "gpu001" in shown and "10 PCIe replay increases" in shown and "0.40" in shown


def test_sbe_growth_is_against_the_gpus_own_history(warehouses: Warehouses, tmp_path: Path) -> None:
    """A GPU that always has corrected errors is not flagged for having them; the same count on
    a GPU that had none is growth; one count alone is little."""
    steady = [("steady", 0, 6 + i / 10, "sbe") for i in range(150)]  # 10 a day to day 20.9
    new = [("new", 1, 20.1 + i / 100, "sbe") for i in range(10)]
    once = [("once", 2, 20.5, "sbe")]
    with shipped(warehouses) as eng:
        ingest(eng, "dcgm", [dcgm_text(tmp_path, "d.prom", steady + new + once, {})])
        cur = eng.cursor()
        risk.refresh(cur)
        found = {
            r[0]: r[1:]
            for r in cur.execute(
                "SELECT node, sbe_recent, sbe_trailing, sbe_growth, growth, score FROM node_risk"
            ).fetchall()
        }
        signals, settings = Signals.load(cur), load_settings(cur)
        cur.close()
    assert found["steady"][:3] == (10, 140, 0.0)  # 10 a day, as in the 14 days before
    assert found["new"][:3] == (10, 0, pytest.approx(2.0))
    assert found["once"][:3] == (1, 0, pytest.approx(0.2))
    assert found["new"][3] == pytest.approx(0.2)  # w_sbe_growth 0.1
    # the backtest's formula gives the table's scores
    score = scores_at(signals, float(signals.at_s.max()), settings)[0]
    for i, node in enumerate(signals.nodes):
        assert score[i] == pytest.approx(found[node][4], rel=1e-9), node
