"""`wanka analyze`: list, run with parameters in any `wanka sql` format, refuse bad input."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import invoke_wanka
from warehouse.analyses import all_analyses


def test_list_names_every_analysis_with_its_description(cli_db: Path) -> None:
    done = invoke_wanka("--db", str(cli_db), "analyze", "--list")
    assert done.returncode == 0, done.stderr
    for analysis in all_analyses().values():
        assert f"{analysis.name:<28} {analysis.title}" in done.stdout
    assert "$tariff_usd_per_kwh DOUBLE = 0.1: electricity price, USD per kWh" in done.stdout


def test_runs_with_a_parameter_in_csv_and_json(cli_db: Path) -> None:
    """perf_per_watt needs only the reference tables, so an empty warehouse answers it."""
    args = ("--db", str(cli_db), "analyze", "perf_per_watt", "--param", "busy_util_pct=50")
    as_csv = invoke_wanka(*args, "--format", "csv")
    assert as_csv.returncode == 0, as_csv.stderr
    lines = as_csv.stdout.splitlines()
    assert lines[0].startswith("model,vendor,bf16_tflops,tdp_w,tflops_per_w_tdp,")
    assert lines[1] == "B200,NVIDIA,2250,1000,2.25,,,0"  # strings quoted only when needed
    rows = json.loads(invoke_wanka(*args, "-f", "json").stdout)
    assert rows[0]["model"] == "B200" and rows[0]["tflops_per_w_tdp"] == 2.25


def test_unknown_parameter_and_wrong_type_exit_2_with_one_line(cli_db: Path) -> None:
    unknown = invoke_wanka("--db", str(cli_db), "analyze", "annual_cost", "-p", "tarif=0.2")
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == (
        "wanka: error: analysis annual_cost has no parameter 'tarif' "
        "(parameters: tariff_usd_per_kwh, utilization)"
    )
    wrong = invoke_wanka("--db", str(cli_db), "analyze", "annual_cost", "-p", "utilization=high")
    assert wrong.returncode == 2
    assert "parameter utilization is DOUBLE: 'high' is not a number" in wrong.stderr
    missing = invoke_wanka("--db", str(cli_db), "analyze", "no_such_analysis")
    assert missing.returncode == 2 and "no analysis named 'no_such_analysis'" in missing.stderr
