"""Analysis parameters: typed, defaulted, unknown names refused; headers parsed strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

from warehouse.analyses import all_analyses, run_analysis_table
from warehouse.analyses.catalog import parse_analysis
from warehouse.analyses.params import bind, parse_assignments
from warehouse.errors import UserError
from warehouse.kernel.engine import Engine


def test_defaults_apply_and_given_text_is_converted_to_the_declared_type() -> None:
    params = all_analyses()["checkpoint_cost"].params
    values = bind(params, {"flows_per_node": "2", "storage_gbs": "400"}, "checkpoint_cost")
    assert values["flows_per_node"] == 2 and values["storage_gbs"] == 400.0
    assert values["precision"] == "bf16" and values["storage_gbs"] != float("inf")
    assert bind(params, {}, "checkpoint_cost")["storage_gbs"] == float("inf")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"tarif": "0.2"}, r"analysis annual_cost has no parameter 'tarif' \(parameters: "),
        ({"tariff_usd_per_kwh": "cheap"}, r"tariff_usd_per_kwh is DOUBLE: 'cheap' is not a number"),
        ({"tariff_usd_per_kwh": "nan"}, r"is not a number"),
    ],
)
def test_unknown_names_and_values_of_the_wrong_type_are_refused(
    given: dict[str, str], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        bind(all_analyses()["annual_cost"].params, given, "annual_cost")


def test_integer_parameters_refuse_fractions() -> None:
    with pytest.raises(UserError, match=r"job_gpus is INTEGER: '1024.5' is not a whole number"):
        bind(all_analyses()["interconnect_balance"].params, {"job_gpus": "1024.5"}, "x")


def test_assignments_need_an_equals_sign() -> None:
    assert parse_assignments(["$a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(UserError, match="expected NAME=VALUE"):
        parse_assignments(["a"])


def test_a_parameter_changes_the_answer(demo_engine: Engine) -> None:
    cur = demo_engine.cursor()
    try:
        cheap = run_analysis_table(cur, "annual_cost", {"tariff_usd_per_kwh": "0.05"})
        dear = run_analysis_table(cur, "annual_cost", {"tariff_usd_per_kwh": "0.10"})
    finally:
        cur.close()
    cheap_usd = cheap.column("annual_cost_usd").to_pylist()
    dear_usd = dear.column("annual_cost_usd").to_pylist()
    # zip over two empty columns would pass: the demo has clusters, so there must be rows
    assert cheap.num_rows > 0 and len(dear_usd) == len(cheap_usd)
    assert all(a is not None and a > 0 for a in cheap_usd), cheap_usd
    for a, b in zip(cheap_usd, dear_usd, strict=True):
        assert b == pytest.approx(2 * a, abs=1)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("-- other_name: x\n-- Columns:\n--   a  b\nSELECT 1 AS a", "expected '-- bad: "),
        (
            "-- bad: x\n-- Parameters:\n--   $p  FLOAT = 1  x\n-- Columns:\n--   a  b\nSELECT 1",
            "TYPE",
        ),
        (
            "-- bad: x\n-- Parameters:\n--   $p  INTEGER = x  y\n-- Columns:\n--   a  b\nSELECT 1",
            "default",
        ),
        ("-- bad: x\nSELECT 1 AS a", "no Columns"),
    ],
)
def test_malformed_headers_name_the_file_and_line(
    tmp_path: Path, header: str, message: str
) -> None:
    path = tmp_path / "bad.sql"
    path.write_text(header)
    with pytest.raises(ValueError, match=message):
        parse_analysis(path)
