"""Judging prediction honestly: the backtest computes node_risk's formula, alerts raised by the
failure itself catch nothing, and on the honest simulator the score meets the issue's targets
without reaching past the share of failures that have a precursor (a recall above it is
leakage)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import datetime

import numpy as np
import pytest

from tests.warehouses import Warehouses
from warehouse.faults import predictors
from warehouse.faults.backtest import Signals, arrivals, load_settings, scores_at
from warehouse.faults.judge import Episode, judge, merged
from warehouse.health import risk
from warehouse.ingest import ingest
from warehouse.kernel.engine import Engine
from warehouse.simulate.failures import FleetConfig, draw_fleet, write_fleet

HONEST = FleetConfig(gpus=10_000, days=30, seed=2, refault_7d=0.0)


@pytest.fixture(scope="module")
def simulated(
    warehouses: Warehouses, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Engine, list[tuple[str, float, bool]]]]:
    out = tmp_path_factory.mktemp("fleet")
    paths = write_fleet(draw_fleet(HONEST), out)
    with (
        warehouses.scratch() as folder,
        Engine(str(warehouses.empty(folder / "w.duckdb", shipped=True))) as eng,
    ):
        ingest(eng, "faults", [str(paths["tickets"])])
        ingest(eng, "dcgm", [str(paths["events"])])
        cur = eng.cursor()
        cur.execute("UPDATE risk_settings SET value = ? WHERE name = 'fleet_nodes'", [HONEST.hosts])
        cur.close()
        with paths["truth"].open() as handle:
            truth = [
                (r["node"], datetime.fromisoformat(r["at"]).timestamp(), r["precursor"] == "True")
                for r in csv.DictReader(handle)
            ]
        yield eng, truth


def test_the_backtest_is_node_risks_formula(
    simulated: tuple[Engine, list[tuple[str, float, bool]]],
) -> None:
    eng, _ = simulated
    cur = eng.cursor()
    risk.refresh(cur)
    table = dict(cur.execute("SELECT node, score FROM node_risk").fetchall())
    signals, settings = Signals.load(cur), load_settings(cur)
    cur.close()
    score = scores_at(signals, float(signals.at_s.max()), settings)[0]
    assert len(table) == len(signals.nodes)
    for i, node in enumerate(signals.nodes):
        assert score[i] == pytest.approx(table[node], rel=1e-9), node
    # the running score at an arrival is the score as of that moment
    at_arrival = arrivals(signals, settings)[0]
    last_at_time = np.flatnonzero(np.diff(signals.at_s, append=np.inf) > 0)
    for j in np.random.default_rng(0).choice(last_at_time, 40, replace=False):
        then = scores_at(signals, float(signals.at_s[j]), settings)[0]
        assert at_arrival[j] == pytest.approx(then[signals.node[j]], rel=1e-9)


def test_an_alert_raised_by_the_failure_itself_catches_nothing() -> None:
    failure = ("n1", 1000.0, True)
    own = judge("own", [Episode("n1", 1000.0, 2000.0)], [failure], 10.0)
    before = judge("before", [Episode("n1", 999.0, 2000.0)], [failure], 10.0)
    assert (own.caught, own.true_alerts, own.false_watch) == (0, 0, 1)
    assert before.caught == 1 and before.lead_p50_h == pytest.approx(1 / 3600)
    assert merged([Episode("a", 0, 10), Episode("a", 5, 20, "drain")]) == [
        Episode("a", 0, 20, "drain")
    ]


def test_risk_meets_the_targets_on_the_honest_simulator_without_leaking(
    simulated: tuple[Engine, list[tuple[str, float, bool]]],
) -> None:
    eng, truth = simulated
    cur = eng.cursor()
    signals, settings = Signals.load(cur), load_settings(cur)
    cur.close()
    gpu_days = HONEST.gpus * HONEST.days
    found = judge("risk", predictors.risk(signals, settings, 86_400), truth, gpu_days)
    share = found.warned / found.failures
    assert 0.15 < share < 0.35
    assert found.recall_warned >= 0.9
    assert found.lead_warned_p50_h >= 0.5
    # only a precursor can warn of a failure here (no lemons): more would be leakage
    assert found.recall <= share + 0.05
    assert found.per_1k_gpu_days(found.false_watch) <= 0.5
    assert found.per_1k_gpu_days(found.false_drain) <= 0.05
    rules = judge("rules", predictors.precursor_rules(signals, 86_400), truth, gpu_days)
    assert rules.recall <= share + 0.05
    assert found.precision > rules.precision  # fewer false alarms at the same recall
