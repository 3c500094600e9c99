"""The registry: every contract function is a SQL function with its arity, on every kind of open
(fresh, reopened, read-only, cursors), written to the catalog only when it changed, documented."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.warehouses import Warehouses
from udfs import docs, registry
from udfs.expr import Num
from udfs.model import Model, model
from udfs.params import non_negative
from udfs.registry import REGISTRY
from warehouse.kernel.engine import Engine

REPO = Path(__file__).resolve().parents[2]

#: SQL_API.md, "Model functions": names, argument order, types and return types are the contract.
CONTRACT = {
    "pcie_gbs(gen INTEGER, lanes INTEGER)": "DOUBLE",
    "nic_gbs(line_rate_gbps DOUBLE)": "DOUBLE",
    "nic_effective_gbs(line_rate_gbps DOUBLE, pcie_gen INTEGER, pcie_lanes INTEGER)": "DOUBLE",
    "nic_bottleneck(line_rate_gbps DOUBLE, pcie_gen INTEGER, pcie_lanes INTEGER)": "VARCHAR",
    "nvlink_gbs(links INTEGER, gbs_per_link_per_dir DOUBLE, bidirectional BOOLEAN)": "DOUBLE",
    "busbw_factor(collective VARCHAR, ranks INTEGER)": "DOUBLE",
    "busbw_gbs(collective VARCHAR, ranks INTEGER, bytes DOUBLE, seconds DOUBLE)": "DOUBLE",
    "allreduce_s(bytes DOUBLE, gpus INTEGER, gpus_per_node INTEGER, nvlink_gbs DOUBLE, "
    "node_nic_gbs DOUBLE, algorithm VARCHAR, latency_us DOUBLE)": "DOUBLE",
    "fiber_rtt_ms(km DOUBLE)": "DOUBLE",
    "cross_site_efficiency(step_compute_s DOUBLE, sync_bytes DOUBLE, wan_gbs DOUBLE, "
    "rtt_ms DOUBLE)": "DOUBLE",
    "checkpoint_bytes_per_param(precision VARCHAR, optimizer VARCHAR)": "DOUBLE",
    "link_write_gbs(nic_gbps DOUBLE, nic_count INTEGER, bond_mode VARCHAR, "
    "flows INTEGER)": "DOUBLE",
    "checkpoint_write_s(bytes DOUBLE, writer_nodes INTEGER, node_write_gbs DOUBLE, "
    "storage_gbs DOUBLE)": "DOUBLE",
    "checkpoint_stall_s(bytes DOUBLE, gpus INTEGER, d2h_gbs DOUBLE)": "DOUBLE",
    "young_interval_s(checkpoint_s DOUBLE, mtbf_s DOUBLE)": "DOUBLE",
    "daly_interval_s(checkpoint_s DOUBLE, mtbf_s DOUBLE)": "DOUBLE",
    "checkpoint_waste_fraction(interval_s DOUBLE, checkpoint_s DOUBLE, mtbf_s DOUBLE, "
    "restart_s DOUBLE)": "DOUBLE",
    "gpu_mtbf_h(failures DOUBLE, gpus INTEGER, hours DOUBLE)": "DOUBLE",
    "cluster_mtbf_h(gpu_mtbf_h DOUBLE, gpus INTEGER)": "DOUBLE",
    "training_flops(params DOUBLE, tokens DOUBLE)": "DOUBLE",
    "training_days(flops DOUBLE, gpus INTEGER, peak_tflops DOUBLE, mfu DOUBLE)": "DOUBLE",
    "implied_mfu(flops DOUBLE, gpus INTEGER, peak_tflops DOUBLE, days DOUBLE)": "DOUBLE",
    "gpu_power_mw(gpus INTEGER, watts_per_gpu DOUBLE)": "DOUBLE",
    "gpu_power_w(tdp_w DOUBLE, utilization DOUBLE, idle_w DOUBLE)": "DOUBLE",
    "pue_from_cooling_share(cooling_share DOUBLE)": "DOUBLE",
    "facility_power_mw(it_power_mw DOUBLE, pue DOUBLE)": "DOUBLE",
    "energy_kwh(power_w DOUBLE, seconds DOUBLE)": "DOUBLE",
    "annual_energy_cost(power_mw DOUBLE, price_per_kwh DOUBLE)": "DOUBLE",
    "carbon_kg(kwh DOUBLE, grid_g_per_kwh DOUBLE)": "DOUBLE",
    "perf_per_watt(tflops DOUBLE, watts DOUBLE)": "DOUBLE",
    "stranded_gpus(free_gpus INTEGER, gpus_per_node INTEGER, job_gpus INTEGER)": "INTEGER",
    "scale_out_s(instances INTEGER, cold_start_s DOUBLE, parallel_starts INTEGER)": "DOUBLE",
    "billed_cost(busy_s DOUBLE, price_per_hour DOUBLE, granularity_s DOUBLE)": "DOUBLE",
}
ARITIES = {sig.split("(")[0]: sig.count(" ") - sig.count(", ") for sig in CONTRACT}
_LISTED = "SELECT function_name || '/' || coalesce(len(parameters), 0) FROM duckdb_functions()"


def _listed(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {row[0] for row in con.sql(_LISTED).fetchall()}


def _oids(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    rows = con.sql(
        "SELECT function_name, function_oid FROM duckdb_functions() "
        "WHERE function_type = 'macro' AND database_name = current_database()"
    ).fetchall()
    return {name: oid for name, oid in rows if name in {m.name for m in REGISTRY}}


def test_contract_signatures_and_return_types() -> None:
    ours = {m.signature: m.returns for m in REGISTRY}
    for signature, returns in CONTRACT.items():
        assert ours.get(signature) == returns, signature


def test_every_contract_function_is_listed_with_its_arity(warehouses: Warehouses) -> None:
    with warehouses.engine() as engine:
        cur = engine.cursor()
        listed = _listed(cur)
        cur.close()
    missing = {f"{name}/{arity}" for name, arity in ARITIES.items()} - listed
    assert not missing
    assert {f"{m.name}/{len(m.params)}" for m in REGISTRY} <= listed


def test_macros_are_visible_from_every_cursor(warehouses: Warehouses) -> None:
    with warehouses.engine() as engine:
        first, second = engine.cursor(), engine.cursor()
        assert (
            first.sql("SELECT pcie_gbs(4, 16)").fetchall()
            == second.sql("SELECT pcie_gbs(4, 16)").fetchall()
        )
        first.close()
        second.close()


def test_reopening_writes_nothing(tmp_path: Path) -> None:
    """Macros are compared with what the file holds; unchanged ones are not written again."""
    path = tmp_path / "w.duckdb"
    Engine(str(path)).close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    Engine(str(path)).close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_only_a_changed_macro_is_written_back(warehouses: Warehouses) -> None:
    with warehouses.engine() as engine:
        before = _oids(engine.con)
        assert set(before) == {m.name for m in REGISTRY}
        registry.register(engine.con)
        assert _oids(engine.con) == before
        # someone replaced one macro by hand: only that one is written back
        engine.con.execute("CREATE OR REPLACE MACRO pcie_gbs(gen, lanes) AS 0")
        registry.register(engine.con)
        after = _oids(engine.con)
        got = engine.con.sql("SELECT pcie_gbs(4, 16)").fetchall()[0][0]
    assert got == pytest.approx(31.5077, abs=1e-4)
    assert {name for name in after if after[name] != before[name]} == {"pcie_gbs"}


def test_obsolete_wanka_macros_are_dropped_and_user_macros_kept() -> None:
    con = duckdb.connect()
    con.execute("CREATE MACRO old_model(x) AS x")
    con.execute(f"COMMENT ON MACRO old_model IS '{registry.TAG} 0: retired'")
    con.execute("CREATE MACRO my_own(x) AS x + 1")
    registry.register(con)
    assert {"old_model/1"} & _listed(con) == set()
    assert "my_own/1" in _listed(con)


def test_read_only_open_uses_the_stored_macros(tmp_path: Path) -> None:
    path = str(tmp_path / "w.duckdb")
    Engine(path).close()
    with Engine(path, read_only=True) as engine:
        cur = engine.cursor()
        assert cur.sql("SELECT nic_bottleneck(400, 4, 16)").fetchall() == [("pcie",)]
        kinds = cur.sql(
            "SELECT DISTINCT function_type FROM duckdb_functions() WHERE function_name IN "
            f"({', '.join(repr(m.name) for m in REGISTRY)})"
        ).fetchall()
        cur.close()
    assert kinds == [("macro",)]  # the file's own macros, no Python fallback


def test_read_only_file_without_macros_gets_arrow_udfs(tmp_path: Path) -> None:
    path = str(tmp_path / "plain.duckdb")
    duckdb.connect(path).close()
    con = duckdb.connect(path, read_only=True)
    try:
        assert registry.register(con) == [m.name for m in REGISTRY]
        cur = con.cursor()
        got = cur.sql(
            "SELECT pcie_gbs(4, 16), pcie_gbs(NULL, 16), stranded_gpus(5, 8, 2), "
            "busbw_factor('AllReduce', 16), nvlink_gbs(12, 25, true)"
        ).fetchall()[0]
        assert got == (pytest.approx(31.5077, abs=1e-4), None, 1, 1.875, 600.0)
        with pytest.raises(
            duckdb.Error, match="pcie_gbs: gen must be an integer from 1 to 7, got 9"
        ):
            cur.sql("SELECT pcie_gbs(9, 16)").fetchall()
        total = cur.sql("SELECT count(pcie_gbs(4, 1 + range % 16)) FROM range(5000)").fetchall()
        assert total == [(5000,)]
        assert {f"{name}/{arity}" for name, arity in ARITIES.items()} <= _listed(cur)
        cur.close()
    finally:
        con.close()


@pytest.mark.parametrize("model", REGISTRY, ids=[m.name for m in REGISTRY])
def test_constant_arguments_fold_to_a_constant(
    con: duckdb.DuckDBPyConnection, model: Model[..., Any]
) -> None:
    """The macros are inlined and deterministic, so DuckDB folds a constant call at plan time."""
    plan = con.sql(f"EXPLAIN SELECT {model.example_call}").fetchall()[0][1]
    assert "CASE" not in plan and "error" not in plan and model.name not in plan, plan


def test_all_models_are_declared_deterministic() -> None:
    assert {m.name for m in REGISTRY} == registry.DETERMINISTIC


# -- docs/model-functions.md -------------------------------------------------------------------


def _page_section() -> str:
    return docs.section_of((REPO / docs.PAGE).read_text(encoding="utf-8"))


def test_page_lists_every_registered_function() -> None:
    rows = re.findall(r"^\| `(\w+)\(", _page_section(), flags=re.MULTILINE)
    missing = {m.name for m in REGISTRY} - set(rows)
    assert not missing, f"functions missing from the {docs.PAGE} table: {sorted(missing)}"


def test_page_table_is_generated_from_the_registry() -> None:
    assert _page_section() == docs.render(), f"run: python -m udfs.docs --write {docs.PAGE}"


def test_a_non_deterministic_model_is_a_volatile_udf(monkeypatch: pytest.MonkeyPatch) -> None:
    @model("DOUBLE", "s", example=(1.0,), deterministic=False, x=non_negative())
    def jittered_s(x: Num) -> Num:
        """A stand-in for a model whose value may change between calls."""
        return x * 2

    monkeypatch.setattr(registry, "REGISTRY", (*REGISTRY, jittered_s))
    con = duckdb.connect()
    registry.register(con)
    row = con.sql(
        "SELECT function_type, stability FROM duckdb_functions() WHERE function_name = 'jittered_s'"
    ).fetchall()
    assert row == [("scalar", "VOLATILE")]
    cur = con.cursor()
    assert cur.sql("SELECT jittered_s(2), jittered_s(NULL)").fetchall() == [(4.0, None)]
    cur.close()
