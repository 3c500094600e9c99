"""The change logs copy deleted/updated rows only while a dynamic table reads the table."""

from __future__ import annotations

from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute


def logged(eng: Engine) -> int:
    return int(eng.con.sql('SELECT count(*) FROM wanka."changes_nodes"').fetchall()[0][0])


def test_nothing_is_copied_for_a_table_no_dynamic_table_reads(warehouses: Warehouses) -> None:
    with warehouses.engine() as eng:
        eng.con.execute(
            "INSERT INTO nodes (host, cluster, gpus) VALUES ('a', 'c1', 8), ('b', 'c1', 8)"
        )
        eng.con.execute("DELETE FROM nodes WHERE host = 'a'")
        eng.con.execute("UPDATE nodes SET gpus = 4 WHERE host = 'b'")
        assert logged(eng) == 0
        cur = eng.cursor()
        execute(
            cur,
            "CREATE DYNAMIC TABLE gpus_per_cluster WITH (freshness = '1 hour') AS "
            "SELECT cluster, sum(gpus) AS gpus FROM nodes GROUP BY cluster",
        ).read_all()
        cur.close()
        eng.con.execute("UPDATE nodes SET gpus = 8 WHERE host = 'b'")
        assert logged(eng) == 2  # the old and the new row of the update
