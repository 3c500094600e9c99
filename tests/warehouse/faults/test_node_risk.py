"""node_risk: its evidence derived at ingest, its score, incremental refresh == full recompute,
and the score beside the state in `wanka health`."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouses import Warehouses
from warehouse.dynamic.refresh import refresh
from warehouse.faults import signals
from warehouse.health import findings, risk
from warehouse.ingest import ReadOptions, ingest
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

DAY = 86_400
T0 = 1_714_521_600  # 2024-05-01


@contextmanager
def shipped(warehouses: Warehouses) -> Iterator[Engine]:
    """A new warehouse with the shipped dynamic tables, in the test's own scratch folder."""
    with warehouses.scratch() as folder:
        path = warehouses.empty(folder / "w.duckdb", shipped=True)
        with Engine(str(path)) as engine:
            yield engine


def faults_csv(folder: Path, name: str, faults: Sequence[tuple[str, float, str]]) -> str:
    """A ticket export: (node, start in days after T0, class), each fault 2 hours long."""
    lines = ["node,start,end,kind,description"]
    for node, day, kind in faults:
        start = T0 + day * DAY
        lines.append(f"{node},{start:.0f},{start + 7200:.0f},{kind},x")
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


METRIC = {
    "sbe": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "nvlink": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "pcie_replay": "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
}


def dcgm_text(
    folder: Path,
    name: str,
    increases: Sequence[tuple[str, int, float, str]],
    counts: dict[tuple[str, int, str], int],
) -> str:
    """dcgm-exporter text: each (host, gpu, days after T0, kind) an increase of the kind's
    counter by one, as a sample a second before (the count so far) and one at it; `counts`
    carries each counter's value from file to file."""
    lines: dict[str, list[str]] = {m: [] for m in METRIC.values()}
    for host, gpu, day, kind in sorted(increases, key=lambda e: e[2]):
        metric = METRIC[kind]
        labels = f'{{gpu="{gpu}",UUID="GPU-{host}-{gpu}",Hostname="{host}"}}'
        at_ms = round((T0 + day * DAY) * 1000)
        before = counts.get((host, gpu, kind), 0)
        counts[(host, gpu, kind)] = before + 1
        lines[metric] += [f"{metric}{labels} {before} {at_ms - 1000}",
                          f"{metric}{labels} {before + 1} {at_ms}"]  # fmt: skip
    path = folder / name
    with path.open("w") as handle:
        for metric, samples in lines.items():
            if samples:
                handle.write(f"# TYPE {metric} counter\n" + "\n".join(samples) + "\n")
    return str(path)


def rounded(cur: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    out = [
        tuple(float(f"{v:.9g}") if isinstance(v, float) and math.isfinite(v) else v for v in r)
        for r in cur.execute(sql).fetchall()
    ]
    return sorted(out, key=repr)


def same_as_full(cur: duckdb.DuckDBPyConnection) -> None:
    for name in (*risk.TABLES, "gpu_risk"):
        [(query,)] = cur.execute(
            "SELECT definition FROM wanka.dynamic_tables WHERE name = ?", [name]
        ).fetchall()
        assert rounded(cur, f"SELECT * FROM {name}") == rounded(cur, query), name


def test_history_scores_a_lemon_above_a_node_that_failed_once(
    warehouses: Warehouses, tmp_path: Path
) -> None:
    faults = [("lemon", d, "GPU") for d in (10, 12, 15, 19)] + [("once", 2, "GPU")]
    faults += [(f"n{i}", 5 + i, "NIC") for i in range(20)]  # the rest of a 200-node fleet
    with shipped(warehouses) as eng:
        ingest(eng, "faults", [faults_csv(tmp_path, "f.csv", faults)])
        cur = eng.cursor()
        cur.execute("UPDATE risk_settings SET value = 200 WHERE name = 'fleet_nodes'")
        risk.refresh(cur)
        scores = dict(cur.execute("SELECT node, score FROM node_risk").fetchall())
        states = dict(cur.execute("SELECT node, state FROM node_risk").fetchall())
        [(signals_kept,)] = cur.execute("SELECT count(*) FROM node_signals").fetchall()
        cur.close()
    assert signals_kept == len(faults)
    assert scores["lemon"] > 3 * scores["once"]
    assert states["lemon"] in ("watch", "drain") and states["once"] == "ok"
    # a node that failed long ago counts for less than one that failed lately
    assert scores["n19"] > scores["n0"]


def test_node_fail_jobs_and_slurm_drains_are_evidence(
    warehouses: Warehouses, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text(
        "job_id,state,gpus,node_list,start_at,end_at\n"
        '1,NODE_FAIL,16,"[gpu001, gpu002]",2024-05-01 00:00:00+00,2024-05-01 03:00:00+00\n'
        '2,COMPLETED,8,"[gpu003]",2024-05-01 00:00:00+00,2024-05-01 03:00:00+00\n'
    )
    with shipped(warehouses) as eng:
        ingest(eng, "csv", [str(jobs)], ReadOptions(table="jobs"))
        ingest(
            eng, "faults", [str(Path(__file__).parents[1] / "fixtures" / "sinfo_list_reasons.txt")]
        )
        cur = eng.cursor()
        kinds = cur.execute(
            "SELECT kind, count(*), count(DISTINCT node) FROM node_signals GROUP BY kind ORDER BY 1"
        ).fetchall()
        # derived again from the tables, the same evidence
        before = rounded(cur, "SELECT node, signal_at, kind, detail FROM node_signals")
        signals.rebuild(cur)
        assert rounded(cur, "SELECT node, signal_at, kind, detail FROM node_signals") == before
        cur.close()
    assert kinds == [("drain", 5, 5), ("node_fail", 2, 2)]


_step = st.one_of(
    st.tuples(
        st.just("faults"),
        st.lists(
            st.tuples(
                st.sampled_from(["a", "b", "c", "d"]),
                st.floats(0, 60),
                st.sampled_from(["GPU", "NIC", "slurm"]),
            ),
            min_size=1,
            max_size=6,
        ),
    ),
    st.tuples(
        st.just("setting"),
        st.sampled_from(
            [
                "w_fault",
                "history_half_life_d",
                "prior_strength",
                "watch_score",
                "growth_recent_h",
                "growth_trailing_d",
                "w_sbe_growth",
            ]
        ),
        st.floats(0.5, 40),
    ),
    st.tuples(st.just("delete"), st.sampled_from(["a", "b", "c", "d"])),
    st.tuples(
        st.just("telemetry"),
        st.lists(  # increases of a GPU's counters, for the growth terms
            st.tuples(
                st.sampled_from(["a", "b"]),
                st.integers(0, 1),
                st.floats(0, 60),
                st.sampled_from(["sbe", "nvlink", "pcie_replay"]),
            ),
            min_size=1,
            max_size=12,
        ),
    ),
)


@settings(
    max_examples=examples(0.25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(_step, min_size=1, max_size=5))
def test_incremental_refresh_equals_full_recompute(
    warehouses: Warehouses, tmp_path: Path, steps: list[tuple[object, ...]]
) -> None:
    counts: dict[tuple[str, int, str], int] = {}
    with shipped(warehouses) as eng:
        cur = eng.cursor()
        try:
            for number, step in enumerate(steps):
                if step[0] == "telemetry":
                    increases = step[1]
                    assert isinstance(increases, list)
                    ingest(eng, "dcgm", [dcgm_text(tmp_path, f"d{number}.prom", increases, counts)])
                elif step[0] == "faults":
                    faults = step[1]
                    assert isinstance(faults, list)
                    ingest(eng, "faults", [faults_csv(tmp_path, f"f{number}.csv", faults)])
                elif step[0] == "setting":
                    cur.execute(
                        "UPDATE risk_settings SET value = ? WHERE name = ?", [step[2], step[1]]
                    )
                else:
                    cur.execute("DELETE FROM node_signals WHERE node = ?", [step[1]])
                for name in (*risk.TABLES, "gpu_risk"):
                    result = refresh(cur, name)
                    assert result.state == "succeeded"
                    if name in ("node_risk", "gpu_risk"):
                        assert result.refresh_mode in ("incremental", "no_data"), result.reason
                same_as_full(cur)
        finally:
            cur.close()


def test_health_shows_risk_beside_state(warehouses: Warehouses, tmp_path: Path) -> None:
    faults = [("lemon", d, "GPU") for d in (1, 2, 3, 4, 5)] + [("ok1", 1, "NIC")]
    with shipped(warehouses) as eng:
        ingest(eng, "faults", [faults_csv(tmp_path, "f.csv", faults)])
        cur = eng.cursor()
        cur.execute("UPDATE risk_settings SET value = 100 WHERE name = 'fleet_nodes'")
        findings.refresh_inputs(cur)
        found = findings.report(cur)
        cur.close()
    assert found["risk"]["nodes"][0]["node"] == "lemon"
    assert found["risk"]["counts"]["ok"] == 1
    text = findings.render(found)
    assert "risk (node_risk, as of 2024-05-06" in text and "lemon" in text


def test_health_without_node_risk(warehouses: Warehouses) -> None:
    """A person may drop node_risk: health still answers, without risk."""
    with shipped(warehouses) as eng:
        cur = eng.cursor()
        execute(cur, "DROP DYNAMIC TABLE node_risk").read_all()
        findings.refresh_inputs(cur)
        assert findings.report(cur)["risk"] == {"as_of": None, "counts": {}, "nodes": []}
        cur.close()
