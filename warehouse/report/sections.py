"""What the report shows: one section per analysis, each with a chart drawn from its result.

A section names a shipped analysis (and parameter values), and what turns the analysis's
Arrow table into one SVG chart. Most charts plot columns as they are, and say so as data: a
`Bars` or `Lines` spec (which columns, title, units, which rows) drawn by one function each.
The few that rearrange more (a pivot, a stack, labels made of several columns) are functions.
Charts only rearrange rows; every figure in them comes from the analysis's SQL.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa

from warehouse.report import charts

Chart = Callable[[pl.DataFrame], str | None]


@dataclass(frozen=True)
class Section:
    """One analysis in the report: its heading, parameters, chart and how many rows to list."""

    topic: str
    analysis: str
    chart: Chart | None = None
    params: dict[str, str] = field(default_factory=dict)
    rows: int = 12
    #: What an empty table means, when that is not "no data" (no idle job is good news).
    empty: str = "No rows: the warehouse holds no data this analysis reads."


def frame(table: pa.Table) -> pl.DataFrame:
    """An analysis result as polars (the charts pick columns and group rows)."""
    out = pl.from_arrow(table)
    assert isinstance(out, pl.DataFrame)
    return out


def _by(df: pl.DataFrame, key: str, x: str, y: str) -> dict[str, tuple[list[Any], list[Any]]]:
    return {
        str(name): (part.get_column(x).to_list(), part.get_column(y).to_list())
        for (name,), part in df.sort(x).group_by(key, maintain_order=True)
    }


#: What a chart plots: (legend label, column) pairs, one bar or line each.
Series = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Bars:
    """Grouped bars: one group per row, labelled by column `x`, one bar per entry of `y`.

    Most charts of the report are this: columns of the analysis's rows as they are, after
    `keep` picks the rows to show (none left: no chart).
    """

    x: str
    y: Series
    title: str
    units: str
    keep: Callable[[pl.DataFrame], pl.DataFrame] | None = None
    log: bool = False
    divide: float | None = None  # the values over this (dollars in millions)

    def __call__(self, df: pl.DataFrame) -> str | None:
        shown = self.keep(df) if self.keep else df
        if shown.is_empty():
            return None
        groups = {
            label: (shown[column] if self.divide is None else shown[column] / self.divide).to_list()
            for label, column in self.y
        }
        return charts.bars(shown[self.x].to_list(), groups, self.title, self.units, log=self.log)


@dataclass(frozen=True)
class Lines:
    """Lines over column `x`: one per entry of `y`, or, where `y` is one column, one per value
    of column `by`, after `keep` picks the rows to show (none left: no chart)."""

    x: str
    y: str | Series
    title: str
    units: str
    by: str = ""
    keep: Callable[[pl.DataFrame], pl.DataFrame] | None = None

    def __call__(self, df: pl.DataFrame) -> str | None:
        shown = self.keep(df) if self.keep else df
        if shown.is_empty():
            return None
        if isinstance(self.y, str):
            series = _by(shown, self.by, self.x, self.y)
        else:
            xs = shown[self.x].to_list()
            series = {label: (xs, shown[column].to_list()) for label, column in self.y}
        return charts.lines(series, self.title, self.units)


def _one_per_cluster(df: pl.DataFrame) -> pl.DataFrame:
    """The first row of each cluster, in cluster order (the analysis repeats cluster facts)."""
    return df.unique("cluster", keep="first", maintain_order=True).sort("cluster")


def _wait_by_size(df: pl.DataFrame) -> pl.DataFrame:
    """Mean queue wait in minutes per size class, over the clusters (weighted by jobs)."""
    return (
        df.group_by("size_class", maintain_order=True)
        .agg((pl.col("mean_wait_s") * pl.col("jobs")).sum() / pl.col("jobs").sum() / 60)
        .rename({"mean_wait_s": "wait_min"})
    )


# The charts that are more than columns as they are: labels made of several columns, a pivot,
# a stack, a choice between bars and lines.


def what_if(df: pl.DataFrame) -> str | None:
    big = df.filter(pl.col("params_b") == 70)
    if big.is_empty():
        return None
    labels = [
        f"{int(r['storage_nic_count'])}x{r['storage_nic_gbps']:g}G {r['bond_mode']}"
        for r in big.iter_rows(named=True)
    ]
    return charts.bars(
        labels,
        {
            "synchronous, one flow": big["sync_one_flow_s"].to_list(),
            "synchronous, a flow per link": big["sync_all_links_s"].to_list(),
            "two-stage async": big["async_stall_s"].to_list(),
        },
        "A 70B checkpoint (980 GB) from one node: seconds training is blocked",
        "seconds (log)",
        log=True,
    )


def by_state(df: pl.DataFrame) -> str | None:
    wide = df.filter(pl.col("gpu_hours") > 0)
    if wide.is_empty():
        return None
    clusters = sorted(set(wide["cluster"].to_list()))
    stacks: dict[str, list[float]] = {}
    order = wide.group_by("state").agg(pl.col("gpu_hours").sum()).sort("gpu_hours", descending=True)
    for state in order["state"].to_list():
        part = dict(wide.filter(pl.col("state") == state).select("cluster", "gpu_hours_pct").rows())
        stacks[state] = [float(part.get(c) or 0) for c in clusters]
    return charts.stacked(clusters, stacks, "GPU-hours by final job state", "% of GPU-hours")


def fragmentation(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    pivot = df.pivot(on="cluster", index="job_gpus", values="stranded_pct").sort("job_gpus")
    return charts.bars(
        pivot["job_gpus"].to_list(),
        {c: pivot[c].to_list() for c in pivot.columns if c != "job_gpus"},
        "Free GPUs a job of each size cannot use (now)",
        "% of free GPUs stranded",
    )


def cold_start(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    row = df.row(0, named=True)
    return charts.bars(
        ["p50", "p90", "p99", "max"],
        {"load latency": [row["p50_ms"], row["p90_ms"], row["p99_ms"], row["max_ms"]]},
        "Alibaba GenAI: model loading (cold start) vs the 200 ms claim (dashed)",
        "ms (log)",
        log=True,
        line_at=200,
    )


def power(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    if df["hour"].n_unique() < 3:  # too few hours for a line: the latest hour as bars
        last = df.filter(pl.col("hour") == pl.col("hour").max()).sort("cluster")
        return charts.bars(
            last["cluster"].to_list(),
            {"GPUs": last["gpu_power_kw"].to_list(), "facility": last["facility_kw"].to_list()},
            "Power by cluster, latest hour: GPUs and the facility at the site's PUE",
            "kW",
        )
    return charts.lines(
        _by(df, "cluster", "hour", "facility_kw"), "Facility power by cluster", "kW"
    )


def efficiency(df: pl.DataFrame) -> str | None:
    """GPU-hours per account (`gpu_efficiency` by account), split into idle and in use."""
    if df.is_empty():
        return None
    top = df.sort("gpu_hours", descending=True).head(12)
    idle = [float(v or 0) for v in top["idle_gpu_hours"].to_list()]
    total = [float(v or 0) for v in top["gpu_hours"].to_list()]
    return charts.stacked(
        [str(name) for name in top["name"].to_list()],
        {"in use": [t - i for t, i in zip(total, idle, strict=True)], "idle (0 %)": idle},
        "GPU-hours by account the telemetry saw: in use and idle",
        "GPU-hours",
    )


SECTIONS: tuple[Section, ...] = (
    Section(
        "Interconnect",
        "interconnect_balance",
        Bars(
            "cluster",
            (
                ("NIC line rate", "nic_line_gbs"),
                ("PCIe link", "pcie_slot_gbs"),
                ("usable", "nic_effective_gbs"),
            ),
            "One compute NIC: line rate vs the PCIe link behind it",
            "GB/s per direction",
            keep=_one_per_cluster,
        ),
        rows=8,
    ),
    Section(
        "Interconnect",
        "interconnect_balance",
        Bars(
            "cluster",
            (
                ("70B hierarchical", "allreduce_70b_hier_s"),
                ("70B flat ring", "allreduce_70b_ring_s"),
                ("7B hierarchical", "allreduce_7b_hier_s"),
                ("7B flat ring", "allreduce_7b_ring_s"),
            ),
            "Gradient all-reduce over 1,024 GPUs, by cluster topology",
            "seconds per step",
            keep=_one_per_cluster,
        ),
        rows=0,
    ),
    Section("Checkpointing", "checkpoint_what_if", what_if, rows=7),
    Section(
        "Checkpointing",
        "checkpoint_cost",
        Bars(
            "job_id",
            (("synchronous save", "sync_stall_s"), ("async save", "async_stall_s")),
            "Training blocked per checkpoint, the 10 slowest savers",
            "seconds (log)",
            keep=lambda df: df.head(10),
            log=True,
        ),
    ),
    Section(
        "Scheduling",
        "gpu_allocation",
        Lines(
            "bucket_start",
            "peak_alloc_pct",
            "GPUs allocated to jobs (peak per hour)",
            "% of the cluster's GPUs",
            by="cluster",
            keep=lambda df: df.filter(pl.col("peak_alloc_pct").is_not_null()),
        ),
        {"cluster": ""},
        rows=0,
    ),
    Section(
        "Scheduling",
        "gpu_allocation",
        Lines(
            "bucket_start",
            "peak_gpus",
            "Philly trace: GPUs held by jobs (peak per day, from submit times)",
            "GPUs",
            by="cluster",
        ),
        {"cluster": "philly", "bucket": "1 day"},
        rows=0,
    ),
    Section(
        "Scheduling",
        "queue_wait",
        Bars(
            "size_class",
            (("mean wait", "wait_min"),),
            "Queue wait by job size (GPUs)",
            "minutes",
            keep=_wait_by_size,
        ),
    ),
    Section("Scheduling", "gpu_hours_by_state", by_state, rows=30),
    Section("Scheduling", "fragmentation", fragmentation, rows=0),
    Section("Scheduling", "job_size_shares", None, rows=30),
    Section("Scheduling", "trace_summary", None, rows=10),
    Section("Scheduling", "cold_start", cold_start),
    Section(
        "Scheduling",
        "duty_cycle",
        Lines(
            "bucket_start",
            (("mean duty cycle %", "mean_duty_pct"), ("idle samples %", "idle_share_pct")),
            "Alibaba GenAI serving GPUs: duty cycle over a day",
            "%",
        ),
        rows=0,
    ),
    Section("Efficiency", "gpu_efficiency", efficiency, {"by": "account"}),
    Section(
        "Efficiency",
        "idle_gpu_jobs",
        None,
        empty="No job left a GPU idle as long as wanka.efficiency_rules' idle_minutes asks.",
    ),
    Section("Energy", "power_by_cluster", power, rows=0),
    Section(
        "Energy",
        "annual_cost",
        Bars(
            "cluster",
            (("at 0.10 USD/kWh", "annual_cost_usd"),),
            "Annual electricity cost per cluster (facility, at the site's PUE)",
            "million USD / year",
            divide=1e6,
        ),
    ),
    Section(
        "Energy",
        "energy_by_team",
        Bars("team", (("cost", "cost"),), "Electricity cost by team", "currency"),
    ),
    Section("Energy", "job_energy", None),
    Section(
        "Energy",
        "perf_per_watt",
        Bars(
            "model",
            (
                ("at TDP", "tflops_per_w_tdp"),
                ("measured under load", "tflops_per_w_measured"),
            ),
            "Dense BF16 TFLOPS per watt",
            "TFLOPS/W",
        ),
    ),
    Section(
        "Reliability",
        "health",
        None,
        rows=30,
        empty="No GPU or node breaks a rule of wanka.health_rules now.",
    ),
    Section("Reliability", "stragglers", None, rows=10, empty="No GPU is slower than its job."),
    Section(
        "Reliability",
        "step_time_changes",
        None,
        rows=10,
        empty="No job's logged step time went up and stayed up.",
    ),
    Section("Reliability", "interruption_causes", None, rows=20),
    Section(
        "Reliability",
        "interruptions",
        Bars(
            "cluster",
            (("interruptions", "per_1k_gpu_days"),),
            "Hardware interruptions per 1,000 GPU-days",
            "per 1,000 GPU-days",
        ),
    ),
    Section(
        "Reliability",
        "xid_by_model",
        Bars(
            "model",
            (("GPUs showing an XID", "per_1k_gpu_hours"),),
            "XID errors by GPU model",
            "per 1,000 GPU-hours",
        ),
    ),
    Section("Reliability", "failure_correlated_jobs", None),
)
