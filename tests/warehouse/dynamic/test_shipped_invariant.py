"""Every shipped dynamic table stays equal to its query under random inserts, updates and
deletes of telemetry (with and without job labels), jobs (seen running, then finished) and the
nodes dimension, refreshed incrementally after each step, in creation order (a table reading
another refreshes after it, as the scheduler does)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tests.warehouse.dynamic.dimension import place_node
from tests.warehouse.samples import insert_samples, minute
from tests.warehouses import Warehouses
from warehouse.dynamic import regroup
from warehouse.dynamic.shipped import in_creation_order, install_shipped, shipped_folder
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

SHIPPED = [p.stem for p in in_creation_order(sorted(shipped_folder().glob("*.sql")))]
#: Shipped tables recomputed at every refresh by design (their rules compare GPUs with their
#: peers, medians no refresh folds row by row): each still equals its query.
FULL = {"health_findings"}
METRICS = [
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
]
HOSTS = ["n1", "n2", "n3"]

sample = st.tuples(
    st.integers(0, 60 * 30),  # minutes after the start: about a day
    st.sampled_from(HOSTS),
    st.integers(0, 1),  # gpu
    st.sampled_from(METRICS),
    st.one_of(st.none(), st.sampled_from([0.0, 13.0, 48.0, 79.0]), st.floats(0, 700)),
    st.one_of(  # the job labels dcgm-exporter adds, or none
        st.none(),
        st.sampled_from(['{"hpc_job":"j1"}', '{"hpc_job":"j2"}', '{"namespace":"ml","pod":"p"}']),
    ),
)
#: samples of GPUs whose exporter names no jobs: the jobs' whole-node rows attribute them
unlabelled = sample.map(lambda s: (*s[:5], None))
job = st.tuples(
    st.sampled_from(["j1", "j2", "j3", "j4"]),
    st.sampled_from(["team-a", "team-b", None]),
    st.one_of(st.none(), st.integers(0, 60 * 30)),  # start, minutes after the start
    st.integers(1, 16),  # gpus
    st.one_of(st.none(), st.integers(0, 20_000)),  # elapsed_s
    st.sampled_from(["RUNNING", "COMPLETED"]),
    st.lists(st.sampled_from(HOSTS), min_size=1, max_size=2, unique=True),  # its nodes
)
#: a job that started and holds its nodes whole (2 GPUs each): whole-node rows with a start
whole_job = st.tuples(
    st.sampled_from(["j1", "j2"]),
    st.none(),
    st.integers(0, 60 * 30),
    st.just(2),
    st.one_of(st.none(), st.integers(0, 20_000)),
    st.sampled_from(["RUNNING", "COMPLETED"]),
    st.lists(st.sampled_from(HOSTS), min_size=1, max_size=1),
)
step = st.one_of(
    st.tuples(st.just("samples"), st.lists(sample, min_size=1, max_size=12)),
    st.tuples(st.just("job"), job),
    st.tuples(st.just("job_delete"), st.sampled_from(["j1", "j2", "j3", "j4"])),
    st.tuples(st.just("node"), st.tuples(st.sampled_from(HOSTS), st.sampled_from(["c1", "c2"]))),
    st.tuples(st.just("node_delete"), st.sampled_from(HOSTS)),
    st.tuples(st.just("samples_delete"), st.floats(0, 700)),
    st.tuples(st.just("samples_update"), st.floats(0, 700)),
)


@pytest.fixture(scope="module")
def eng(warehouses: Warehouses) -> Iterator[Engine]:
    with warehouses.engine() as engine:
        install_shipped(engine)
        yield engine


def apply(eng: Engine, action: str, arg: object) -> None:
    con = eng.con
    if action == "samples":
        assert isinstance(arg, list)
        insert_samples(
            con,
            [
                {"ts": minute(m), "host": h, "gpu": g, "uuid": f"GPU-{h}-{g}", "model": "H100"}
                | {"metric": metric, "value": v, "labels": lab}
                for m, h, g, metric, v, lab in arg
            ],
        )
    elif action == "job":
        assert isinstance(arg, tuple)
        job_id, account, start, gpus, elapsed, state, hosts = arg
        con.execute("DELETE FROM jobs WHERE job_id = ?", [job_id])
        con.execute(
            "INSERT INTO jobs (job_id, account, start_at, end_at, gpus, elapsed_s, state, "
            "node_list) VALUES (?, ?, TIMESTAMPTZ '2026-11-01' + to_minutes(CAST(? AS BIGINT)), "
            "CASE WHEN ? = 'COMPLETED' THEN TIMESTAMPTZ '2026-11-01' + "
            "to_minutes(CAST(? AS BIGINT)) + to_seconds(CAST(coalesce(?, 0) AS BIGINT)) END, "
            "?, ?, ?, ?)",
            [job_id, account, start, state, start, elapsed, gpus, elapsed, state, hosts],
        )
    elif action == "job_delete":
        con.execute("DELETE FROM jobs WHERE job_id = ?", [arg])
    elif action == "node":
        assert isinstance(arg, tuple)
        place_node(con, *arg)
    elif action == "node_delete":
        con.execute("DELETE FROM nodes WHERE host = ?", [arg])
    elif action == "samples_delete":
        execute(con, "DELETE FROM gpu_metrics WHERE value > ?", [arg]).read_all()
    elif action == "samples_update":
        execute(con, "UPDATE gpu_metrics SET value = value / 2 WHERE value > ?", [arg]).read_all()


def rows(eng: Engine, sql: str) -> list[tuple[object, ...]]:
    def norm(v: object) -> object:
        return float(f"{v:.9g}") if isinstance(v, float) and math.isfinite(v) else v

    out = [tuple(norm(v) for v in r) for r in eng.con.sql(sql).fetchall()]
    return sorted(out, key=repr)


@pytest.mark.slow
@settings(
    max_examples=examples(0.2),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(step, min_size=1, max_size=8))
def test_every_shipped_table_equals_its_query(eng: Engine, steps: list[tuple[str, object]]) -> None:
    for table in ("gpu_metrics", "jobs", "nodes", "gpu_attribution"):
        execute(eng.con, f"DELETE FROM {table}").read_all()
    eng.con.execute("DELETE FROM wanka.job_label_stretches")
    cur = eng.cursor()
    for name in SHIPPED:  # start from the empty state, as any other refresh would
        execute(cur, f"REFRESH DYNAMIC TABLE {name}").read_all()
    for action, arg in steps:
        apply(eng, action, arg)
        for name in SHIPPED:
            done = execute(cur, f"REFRESH DYNAMIC TABLE {name}").read_all().to_pylist()[0]
            wanted = ("full",) if name in FULL else ("incremental", "no_data")
            assert done["refresh_mode"] in wanted, (name, done)
            [(query,)] = eng.con.execute(
                "SELECT definition FROM wanka.dynamic_tables WHERE name = ?", [name]
            ).fetchall()
            assert rows(eng, f'SELECT * FROM main."{name}"') == rows(eng, query), (name, action)
    cur.close()


@pytest.mark.slow
@settings(
    max_examples=examples(0.2),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    first=st.lists(unlabelled, min_size=4, max_size=12),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("samples"), st.lists(unlabelled, min_size=1, max_size=12)),
            st.tuples(st.just("job"), whole_job),
            st.tuples(st.just("job_delete"), st.sampled_from(["j1", "j2"])),
            st.tuples(st.just("samples_update"), st.floats(0, 700)),
        ),
        min_size=1,
        max_size=8,
    ),
)
def test_every_shipped_table_equals_its_query_when_dimension_changes_recompute_buckets(
    eng: Engine,
    monkeypatch: pytest.MonkeyPatch,
    first: list[tuple[object, ...]],
    steps: list[tuple[str, object]],
) -> None:
    """As above, with every join's dimension change taken as costly (as over a large fact
    table: regroup.FULL_MIN_ROWS), so a change of gpu_attribution recomputes the day buckets
    its rows reach (warehouse.dynamic.reached), or the whole table where they reach back
    without bound: jobs come and go on known nodes over samples already stored."""
    monkeypatch.setattr(regroup, "FULL_MIN_ROWS", 1)
    for table in ("gpu_metrics", "jobs", "nodes", "gpu_attribution"):
        execute(eng.con, f"DELETE FROM {table}").read_all()
    eng.con.execute("DELETE FROM wanka.job_label_stretches")
    for host in HOSTS:  # known nodes: a job on them holds whole-node GPU intervals
        place_node(eng.con, host, "c1")
    for host in HOSTS:  # every GPU seen before (its 'labels' row): none is first seen later
        eng.con.execute(
            "INSERT INTO gpu_attribution (host, gpu, source) VALUES (?, 0, 'labels'), "
            "(?, 1, 'labels')",
            [host, host],
        )
    apply(eng, "samples", first)
    cur = eng.cursor()
    for name in SHIPPED:
        execute(cur, f"REFRESH DYNAMIC TABLE {name}").read_all()
    for action, arg in steps:
        apply(eng, action, arg)
        for name in SHIPPED:
            execute(cur, f"REFRESH DYNAMIC TABLE {name}").read_all()
            [(query,)] = eng.con.execute(
                "SELECT definition FROM wanka.dynamic_tables WHERE name = ?", [name]
            ).fetchall()
            assert rows(eng, f'SELECT * FROM main."{name}"') == rows(eng, query), (name, action)
    cur.close()
