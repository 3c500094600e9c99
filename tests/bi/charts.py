"""Superset's chart data (`POST /api/v1/chart/data`) as its explore view asks for it: a table, a
line at each time grain, a big number, a pie and a bar with filters, each checked against what
wanka itself answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.bi.api import Context
from tests.bi.harness import StepFailed

GRAINS = ("PT1M", "PT1H", "P1D", "P1W", "P1M")
GRAINS = ("PT1M", "PT1H", "P1D", "P1W", "P1M")
FINE_GRAINS = ("PT1M", "PT1H")  # over the demo's last hour or day of jobs; the others over all
SUM_GPUS = {"expressionType": "SIMPLE", "column": {"column_name": "gpus"}, "aggregate": "SUM",
            "label": "SUM(gpus)"}  # fmt: skip
AVG_ELAPSED = {"expressionType": "SIMPLE", "column": {"column_name": "elapsed_s"},
               "aggregate": "AVG", "label": "AVG(elapsed_s)"}  # fmt: skip
COUNT_ALL = {"expressionType": "SQL", "sqlExpression": "COUNT(*)", "label": "COUNT(*)"}


def start_of(grain: str, moment: datetime) -> datetime:
    """The start of the `grain` period holding `moment` (weeks start on Monday, as in PostgreSQL).

    >>> start_of("P1W", datetime(2026, 11, 1, 0, 6)), start_of("P1M", datetime(2026, 11, 1, 0, 6))
    (datetime.datetime(2026, 10, 26, 0, 0), datetime.datetime(2026, 11, 1, 0, 0))
    """
    moment = moment.replace(second=0, microsecond=0)
    if grain == "PT1M":
        return moment
    moment = moment.replace(minute=0)
    if grain == "PT1H":
        return moment
    moment = moment.replace(hour=0)
    if grain == "P1W":
        return moment - timedelta(days=moment.weekday())
    return moment.replace(day=1) if grain == "P1M" else moment


class Charts:
    """The chart steps over the datasets made before them."""

    def __init__(self, context: Context) -> None:
        self.context = context

    def chart_data(self, table: str, viz: str, query: dict[str, Any]) -> dict[str, Any]:
        """POST /api/v1/chart/data as the explore view sends it for `viz`; the first result."""
        dataset_id = self.context.dataset(table)
        body = {
            "datasource": {"id": dataset_id, "type": "table"},
            "force": True,
            "form_data": {"viz_type": viz, "datasource": f"{dataset_id}__table"},
            "queries": [query],
            "result_format": "json",
            "result_type": "full",
        }
        result: dict[str, Any] = self.context.api.ok(
            self.context.api.post("/api/v1/chart/data", body)
        )["result"][0]
        if result.get("error") or result.get("status") != "success":
            raise StepFailed(f"{result.get('status')}: {result.get('error')}")
        return result

    def chart_table(self) -> str:
        query = {"columns": ["job_id", "energy_kwh", "util_pct"], "metrics": [], "row_limit": 10,
                 "orderby": [["energy_kwh", False]], "time_range": "No filter"}  # fmt: skip
        rows = self.chart_data("job_gpu_usage", "table", query)["data"]
        energy = [row["energy_kwh"] for row in rows]
        if len(rows) != min(10, self.context.known().usage_rows) or energy != sorted(
            energy, reverse=True
        ):
            raise StepFailed(f"{len(rows)} rows, energy_kwh {energy}")
        return f"{len(rows)} rows, top energy_kwh {energy[0]:.1f}"

    def chart_timeseries(self, grain: str) -> str:
        axis = {"timeGrain": grain, "columnType": "BASE_AXIS", "sqlExpression": "submit_at",
                "label": "submit_at", "expressionType": "SQL"}  # fmt: skip
        query: dict[str, Any] = {
            "columns": [axis],
            "metrics": ["count"],
            "row_limit": 50000,
            "post_processing": [
                {"operation": "pivot", "options": {"index": ["submit_at"], "columns": [],
                 "aggregates": {"count": {"operator": "mean"}}, "drop_missing_columns": False}},
                {"operation": "flatten"},
            ],
        }  # fmt: skip
        truth = self.context.known()
        if grain in FINE_GRAINS:  # minutes over the last hour, hours over the last day
            end = truth.last_hour + timedelta(hours=1)
            start = end - timedelta(hours=1 if grain == "PT1M" else 24)
            span = f"{start:%Y-%m-%dT%H:%M:%S} : {end:%Y-%m-%dT%H:%M:%S}"
            query["filters"] = [{"col": "submit_at", "op": "TEMPORAL_RANGE", "val": span}]
            expected = truth.jobs_since[start]
        else:
            query["time_range"] = "No filter"
            expected = truth.jobs
        rows = self.chart_data("jobs", "echarts_timeseries_line", query)["data"]
        buckets = [datetime.fromtimestamp(row["submit_at"] / 1000, UTC) for row in rows]
        off = [b for b in buckets if start_of(grain, b) != b]
        total = round(sum(row["count"] or 0 for row in rows))
        if off or total != expected:
            raise StepFailed(
                f"{len(rows)} points, {len(off)} off the grain (first {off[:1]}), "
                f"{total} jobs where wanka counts {expected}"
            )
        return f"{len(rows)} points, all on the grain, {total:,} jobs"

    def chart_big_number(self) -> str:
        query = {"metrics": [COUNT_ALL], "columns": [], "time_range": "No filter"}
        value = self.chart_data("jobs", "big_number_total", query)["data"][0]["COUNT(*)"]
        if value != self.context.known().jobs:
            raise StepFailed(f"{value} where wanka counts {self.context.known().jobs}")
        return f"{value:,} jobs"

    def chart_pie(self) -> str:
        query = {"columns": ["state"], "metrics": [SUM_GPUS], "row_limit": 100,
                 "filters": [{"col": "gpus", "op": ">", "val": 0}],
                 "orderby": [[SUM_GPUS, False]], "time_range": "No filter"}  # fmt: skip
        rows = self.chart_data("jobs", "pie", query)["data"]
        slices = {row["state"]: row["SUM(gpus)"] for row in rows}
        if slices != self.context.known().gpus_by_state:
            raise StepFailed(f"{slices} where wanka sums {self.context.known().gpus_by_state}")
        return f"{len(slices)} slices, SUM(gpus) {sum(slices.values()):,} where gpus > 0"

    def chart_bar(self) -> str:
        axis = {"columnType": "BASE_AXIS", "sqlExpression": "gpu_type", "label": "gpu_type",
                "expressionType": "SQL"}  # fmt: skip
        query = {"columns": [axis], "metrics": [AVG_ELAPSED], "row_limit": 1000,
                 "filters": [{"col": "state", "op": "==", "val": "COMPLETED"},
                             {"col": "gpus", "op": ">=", "val": 1}],
                 "orderby": [[AVG_ELAPSED, False]], "time_range": "No filter"}  # fmt: skip
        rows = self.chart_data("jobs", "echarts_timeseries_bar", query)["data"]
        bars = {row["gpu_type"]: row["AVG(elapsed_s)"] for row in rows if row["gpu_type"]}
        expected = self.context.known().avg_elapsed_by_gpu_type
        wrong = {k for k in expected if abs((bars.get(k) or -1) - expected[k]) > 1e-6 * expected[k]}
        if wrong or set(bars) != set(expected):
            raise StepFailed(f"bars {sorted(bars)} vs {sorted(expected)}; differ: {sorted(wrong)}")
        return f"{len(bars)} bars of AVG(elapsed_s) by gpu_type, COMPLETED jobs with GPUs"
