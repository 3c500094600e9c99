"""A refresh killed inside its transaction leaves the previous state; the next one catches up."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

ROLLUP = (
    "SELECT time_bucket(INTERVAL '1 hour', ts) AS hour, host, avg(value) AS a, count(*) AS n "
    "FROM gpu_metrics GROUP BY ALL"
)
SEED = (
    "INSERT INTO gpu_metrics (ts, host, metric, value) SELECT TIMESTAMPTZ '2026-11-01' "
    "+ i * INTERVAL 7 MINUTE, 'h' || i % {hosts}, 'U', i FROM range(60) t(i)"
)

KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from warehouse.kernel.engine import Engine
    from warehouse.dynamic import refresh as module
    real = module._incremental

    def apply_then_die(*args):
        real(*args)  # the delta is written, the transaction still open
        os.kill(os.getpid(), signal.SIGKILL)

    module._incremental = apply_then_die
    engine = Engine(sys.argv[1])
    module.refresh(engine.cursor(), "hh")
    """
)


def snapshot(eng: Engine, sql: str) -> list[tuple[object, ...]]:
    return sorted(eng.con.sql(sql).fetchall(), key=repr)


def test_killed_refresh_leaves_previous_state(db_path: Path, warehouses: Warehouses) -> None:
    with Engine(str(warehouses.empty(db_path))) as eng:
        execute(eng.con, SEED.format(hosts=3)).read_all()
        cur = eng.cursor()
        execute(cur, f"CREATE DYNAMIC TABLE hh WITH (freshness = '1 hour') AS {ROLLUP}").read_all()
        cur.close()
        execute(eng.con, SEED.format(hosts=5)).read_all()
        before = snapshot(eng, "SELECT * FROM hh")
        info = eng.con.sql("SELECT watermark FROM wanka.dynamic_tables").fetchall()
    done = subprocess.run([sys.executable, "-c", KILLER, str(db_path)], timeout=120)
    assert done.returncode == -9
    with Engine(str(db_path)) as eng:
        assert snapshot(eng, "SELECT * FROM hh") == before
        assert eng.con.sql("SELECT watermark FROM wanka.dynamic_tables").fetchall() == info
        cur = eng.cursor()
        out = execute(cur, "REFRESH DYNAMIC TABLE hh").read_all().to_pylist()
        cur.close()
        assert out[0]["refresh_mode"] == "incremental"
        assert snapshot(eng, "SELECT * FROM hh") == snapshot(eng, ROLLUP)
