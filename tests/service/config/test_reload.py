"""A reload is all or nothing, retention rules included: a file whose second rule is refused
leaves the first unset and the running configuration in force; a good one sets them."""

from __future__ import annotations

from pathlib import Path

from service.config import build
from service.config.reload import Reloader
from service.serve.server import Server
from tests.warehouses import Warehouses


def _rules(server: Server) -> dict[str, float]:
    return dict(
        server.with_cursor(
            lambda cur: cur.sql(
                "SELECT table_name, epoch(keep) FROM wanka.retention ORDER BY ALL"
            ).fetchall()
        )
    )


def test_a_refused_rule_sets_none_of_the_files_rules(
    tmp_path: Path, warehouses: Warehouses
) -> None:
    db = str(warehouses.empty(tmp_path / "w.duckdb", shipped=True))
    file = tmp_path / "wanka.yml"
    file.write_text("scheduler: {refresh_interval: 0s}\nretention: {gpu_metrics: 30d}\n")
    with Server(db) as server:
        server.start(build.load(file, {"db": db}))
        assert _rules(server) == {"gpu_metrics": 30 * 86_400}
        reloader = Reloader(server, file, {"db": db})

        file.write_text(
            "scheduler: {refresh_interval: 0s}\n"
            "retention: {gpu_metrics: 7d, no_such_table: 1d}\n"
            "limits: {query_timeout: 5s}\n"
        )
        refused = reloader.reload()
        assert not refused.ok and "no_such_table" in str(refused.error)
        assert _rules(server) == {"gpu_metrics": 30 * 86_400}  # not 7 days: nothing was set
        assert server.limits.timeout_s == 60 and server.config_read[0] is False

        file.write_text(
            "scheduler: {refresh_interval: 0s}\n"
            "retention: {gpu_metrics: 7d}\nlimits: {query_timeout: 5s}\n"
        )
        taken = reloader.reload()
        assert taken.ok and taken.needs_restart == []
        assert _rules(server) == {"gpu_metrics": 7 * 86_400}
        assert server.limits.timeout_s == 5 and server.config_read[0] is True
