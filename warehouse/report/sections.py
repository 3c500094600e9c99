"""What the report shows: one section per analysis, each with a chart drawn from its result.

A section names a shipped analysis (and parameter values), and a function that turns the
analysis's Arrow table into one SVG chart. Charts only rearrange rows; every figure in them
comes from the analysis's SQL.
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


def interconnect(df: pl.DataFrame) -> str | None:
    one = df.unique("cluster", keep="first", maintain_order=True).sort("cluster")
    if one.is_empty():
        return None
    return charts.bars(
        one["cluster"].to_list(),
        {
            "70B hierarchical": one["allreduce_70b_hier_s"].to_list(),
            "70B flat ring": one["allreduce_70b_ring_s"].to_list(),
            "7B hierarchical": one["allreduce_7b_hier_s"].to_list(),
            "7B flat ring": one["allreduce_7b_ring_s"].to_list(),
        },
        "Gradient all-reduce over 1,024 GPUs, by cluster topology",
        "seconds per step",
    )


def nic_vs_slot(df: pl.DataFrame) -> str | None:
    one = df.unique("cluster", keep="first", maintain_order=True).sort("cluster")
    if one.is_empty():
        return None
    return charts.bars(
        one["cluster"].to_list(),
        {
            "NIC line rate": one["nic_line_gbs"].to_list(),
            "PCIe link": one["pcie_slot_gbs"].to_list(),
            "usable": one["nic_effective_gbs"].to_list(),
        },
        "One compute NIC: line rate vs the PCIe link behind it",
        "GB/s per direction",
    )


def checkpoint(df: pl.DataFrame) -> str | None:
    top = df.head(10)
    if top.is_empty():
        return None
    return charts.bars(
        top["job_id"].to_list(),
        {
            "synchronous save": top["sync_stall_s"].to_list(),
            "async save": top["async_stall_s"].to_list(),
        },
        "Training blocked per checkpoint, the 10 slowest savers",
        "seconds (log)",
        log=True,
    )


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


def allocation(df: pl.DataFrame) -> str | None:
    known = df.filter(pl.col("peak_alloc_pct").is_not_null())
    if known.is_empty():
        return None
    return charts.lines(
        _by(known, "cluster", "bucket_start", "peak_alloc_pct"),
        "GPUs allocated to jobs (peak per hour)",
        "% of the cluster's GPUs",
    )


def philly_demand(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    return charts.lines(
        _by(df, "cluster", "bucket_start", "peak_gpus"),
        "Philly trace: GPUs held by jobs (peak per day, from submit times)",
        "GPUs",
    )


def queue(df: pl.DataFrame) -> str | None:
    by_size = (
        df.group_by("size_class", maintain_order=True)
        .agg((pl.col("mean_wait_s") * pl.col("jobs")).sum() / pl.col("jobs").sum() / 60)
        .rename({"mean_wait_s": "wait_min"})
    )
    if by_size.is_empty():
        return None
    return charts.bars(
        by_size["size_class"].to_list(),
        {"mean wait": by_size["wait_min"].to_list()},
        "Queue wait by job size (GPUs)",
        "minutes",
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


def perf_per_watt(df: pl.DataFrame) -> str | None:
    return charts.bars(
        df["model"].to_list(),
        {
            "at TDP": df["tflops_per_w_tdp"].to_list(),
            "measured under load": df["tflops_per_w_measured"].to_list(),
        },
        "Dense BF16 TFLOPS per watt",
        "TFLOPS/W",
    )


def annual(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    return charts.bars(
        df["cluster"].to_list(),
        {"at 0.10 USD/kWh": (df["annual_cost_usd"] / 1e6).to_list()},
        "Annual electricity cost per cluster (facility, at the site's PUE)",
        "million USD / year",
    )


def teams(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    return charts.bars(
        df["team"].to_list(), {"cost": df["cost"].to_list()}, "Electricity cost by team", "currency"
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


def interruptions(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    return charts.bars(
        df["cluster"].to_list(),
        {"interruptions": df["per_1k_gpu_days"].to_list()},
        "Hardware interruptions per 1,000 GPU-days",
        "per 1,000 GPU-days",
    )


def xids(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    return charts.bars(
        df["model"].to_list(),
        {"GPUs showing an XID": df["per_1k_gpu_hours"].to_list()},
        "XID errors by GPU model",
        "per 1,000 GPU-hours",
    )


def duty(df: pl.DataFrame) -> str | None:
    if df.is_empty():
        return None
    return charts.lines(
        {
            "mean duty cycle %": (df["bucket_start"].to_list(), df["mean_duty_pct"].to_list()),
            "idle samples %": (df["bucket_start"].to_list(), df["idle_share_pct"].to_list()),
        },
        "Alibaba GenAI serving GPUs: duty cycle over a day",
        "%",
    )


SECTIONS: tuple[Section, ...] = (
    Section("Interconnect", "interconnect_balance", nic_vs_slot, rows=8),
    Section("Interconnect", "interconnect_balance", interconnect, rows=0),
    Section("Checkpointing", "checkpoint_what_if", what_if, rows=7),
    Section("Checkpointing", "checkpoint_cost", checkpoint),
    Section("Scheduling", "gpu_allocation", allocation, {"cluster": ""}, rows=0),
    Section(
        "Scheduling",
        "gpu_allocation",
        philly_demand,
        {"cluster": "philly", "bucket": "1 day"},
        rows=0,
    ),
    Section("Scheduling", "queue_wait", queue),
    Section("Scheduling", "gpu_hours_by_state", by_state, rows=30),
    Section("Scheduling", "fragmentation", fragmentation, rows=0),
    Section("Scheduling", "job_size_shares", None, rows=30),
    Section("Scheduling", "trace_summary", None, rows=10),
    Section("Scheduling", "cold_start", cold_start),
    Section("Scheduling", "duty_cycle", duty, rows=0),
    Section("Efficiency", "gpu_efficiency", efficiency, {"by": "account"}),
    Section(
        "Efficiency",
        "idle_gpu_jobs",
        None,
        empty="No job left a GPU idle as long as wanka.efficiency_rules' idle_minutes asks.",
    ),
    Section("Energy", "power_by_cluster", power, rows=0),
    Section("Energy", "annual_cost", annual),
    Section("Energy", "energy_by_team", teams),
    Section("Energy", "job_energy", None),
    Section("Energy", "perf_per_watt", perf_per_watt),
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
    Section("Reliability", "interruptions", interruptions),
    Section("Reliability", "xid_by_model", xids),
    Section("Reliability", "failure_correlated_jobs", None),
)
