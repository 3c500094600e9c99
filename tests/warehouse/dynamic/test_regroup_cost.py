"""The cost rule of an affected-groups refresh: a full refresh once most groups are affected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from warehouse.dynamic.regroup import CHAIN_FULL_SHARE, FULL_MIN_GROUPS, FULL_SHARE
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

HOSTS = FULL_MIN_GROUPS + 200  # one group per host: a table the rule applies to
#: One row per host, value i, in one hour.
SEED = (
    "INSERT INTO gpu_metrics (ts, host, metric, value) SELECT TIMESTAMPTZ '2026-11-01' "
    f"+ (i % 60) * INTERVAL 1 MINUTE, 'h' || i, 'U', i FROM range({HOSTS}) t(i)"
)
GROUPS = (
    "SELECT host, count(DISTINCT value) AS d, median(value) AS m FROM gpu_metrics GROUP BY host"
)
AGGREGATE = "SELECT host, sum(value) AS s, count(*) AS n FROM gpu_metrics GROUP BY host"


def rows(eng: Engine, sql: str) -> list[dict[str, Any]]:
    cur = eng.cursor()
    try:
        out: list[dict[str, Any]] = execute(cur, sql).read_all().to_pylist()
        return out
    finally:
        cur.close()


def same_as_query(eng: Engine, query: str) -> bool:
    return rows(eng, f"SELECT count(*) AS n FROM (SELECT * FROM t EXCEPT ALL {query})") == [
        {"n": 0}
    ] and rows(eng, f"SELECT count(*) AS n FROM ({query} EXCEPT ALL SELECT * FROM t)") == [{"n": 0}]


@pytest.fixture
def eng(fresh_db: Path) -> Engine:
    engine = Engine(str(fresh_db))
    execute(engine.con, SEED).read_all()
    return engine


def create(eng: Engine, query: str, plan: str) -> None:
    made = rows(eng, f"CREATE DYNAMIC TABLE t WITH (freshness = '1 hour') AS {query}")[0]
    assert made["refresh_mode"] == plan


def test_most_groups_appended_to_refresh_fully(eng: Engine) -> None:
    create(eng, GROUPS, "groups")
    most = HOSTS * 3 // 4  # 900 of 1,200 hosts get a row, 10 hosts a new group
    execute(
        eng.con, SEED.replace(f"range({HOSTS})", f"range({HOSTS - most + 10}, {HOSTS + 10})")
    ).read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE t")[0]
    assert done["refresh_mode"] == "full"
    assert done["reason"] == (
        f"{most} of {HOSTS} groups affected: a full refresh is cheaper than recomputing them"
    )
    assert (done["rows_inserted"], done["rows_deleted"]) == (HOSTS + 10, HOSTS)
    assert same_as_query(eng, GROUPS)
    history = rows(
        eng,
        "SELECT refresh_mode, refresh_mode_reason AS r FROM wanka.refresh_history "
        "ORDER BY started_at DESC LIMIT 1",
    )
    assert history == [{"refresh_mode": "full", "r": done["reason"]}]
    assert rows(eng, "REFRESH DYNAMIC TABLE t")[0]["refresh_mode"] == "no_data"


def test_few_groups_appended_to_are_recomputed(eng: Engine) -> None:
    create(eng, GROUPS, "groups")
    execute(eng.con, SEED.replace(f"range({HOSTS})", "range(10)")).read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE t")[0]
    assert (done["refresh_mode"], done["rows_inserted"], done["rows_deleted"]) == (
        "incremental",
        10,
        10,
    )
    assert same_as_query(eng, GROUPS)


def test_aggregate_update_of_most_groups_rebuilds_the_state(eng: Engine) -> None:
    create(eng, AGGREGATE, "aggregate")
    execute(
        eng.con, f"UPDATE gpu_metrics SET value = value + 1 WHERE value >= {HOSTS // 4}"
    ).read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE t")[0]
    most = HOSTS - HOSTS // 4
    assert done["refresh_mode"] == "full"
    assert done["reason"] == (
        f"{most} of {HOSTS} groups affected: a full refresh is cheaper than recomputing them"
    )
    assert same_as_query(eng, AGGREGATE)
    # the state was rebuilt by the full refresh: a later update of a few groups, recomputed
    # from it, still gives the query's result
    execute(eng.con, "UPDATE gpu_metrics SET value = value + 1 WHERE value < 5").read_all()
    done = rows(eng, "REFRESH DYNAMIC TABLE t")[0]
    assert done["refresh_mode"] == "incremental" and "recomputed the 5 groups" in done["reason"]
    execute(eng.con, SEED.replace(f"range({HOSTS})", "range(3)")).read_all()
    assert rows(eng, "REFRESH DYNAMIC TABLE t")[0]["refresh_mode"] == "incremental"
    assert same_as_query(eng, AGGREGATE)


def test_small_tables_stay_incremental(eng: Engine) -> None:
    execute(eng.con, "DELETE FROM gpu_metrics WHERE value >= 20").read_all()
    create(eng, GROUPS, "groups")
    execute(
        eng.con, SEED.replace(f"range({HOSTS})", "range(20)")
    ).read_all()  # every group affected
    done = rows(eng, "REFRESH DYNAMIC TABLE t")[0]
    assert done["refresh_mode"] == "incremental"
    assert same_as_query(eng, GROUPS)


def test_a_chain_recomputes_up_to_half_its_groups(eng: Engine) -> None:
    """A table reading a dynamic table (a chain) recomputes its affected groups up to
    CHAIN_FULL_SHARE of them; past it, it refreshes fully."""
    create(eng, AGGREGATE, "aggregate")
    chained = "SELECT host, max(s) AS s, max(n) AS n FROM t GROUP BY host"
    made = rows(eng, f"CREATE DYNAMIC TABLE c WITH (freshness = '1 hour') AS {chained}")[0]
    assert made["refresh_mode"] != "full"
    some = int(HOSTS * CHAIN_FULL_SHARE * 0.6)  # above FULL_SHARE, below the chain's share
    assert some > FULL_SHARE * HOSTS
    for count, mode in ((some, "incremental"), (HOSTS * 3 // 4, "full")):
        execute(eng.con, SEED.replace(f"range({HOSTS})", f"range({count})")).read_all()
        rows(eng, "REFRESH DYNAMIC TABLE t")
        done = rows(eng, "REFRESH DYNAMIC TABLE c")[0]
        assert done["refresh_mode"] == mode, done
        got = rows(eng, "SELECT * FROM c EXCEPT ALL SELECT host, s, n FROM t")
        assert got == [] and len(rows(eng, "SELECT * FROM c")) == HOSTS
