"""Published GPU cluster traces: Microsoft Philly jobs and Alibaba's GenAI serving traces.

`philly` → `jobs`. The Philly job list as the AdaptDL simulator publishes it:

    timestamp,duration,num_gpus,gpu_time,cluster
    2017-10-09 07:01:55,66.0,1,66.0,11cb48

`timestamp` is the submit time, `duration` the run time in seconds, `cluster` the virtual cluster
(Philly's unit of team quota: it becomes `account` and `partition`). The trace has no job ids,
states or start times: a job's id is `philly-<line number>`, its state and start are NULL (the
analyses say so), and `gpu_time` must equal num_gpus × duration or the line is rejected.

`alibaba-duty-cycle` → `gpu_duty_cycle` (`value,timestamp_anon,container_ip`: % of time a kernel
ran, epoch seconds, anonymised container) and `alibaba-model-load` → `model_load_latency`
(`timestamp_anon,value,container_ip`: model-loading latency in ms), from Alibaba's
cluster-trace-v2026-GenAI.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import polars as pl

from warehouse.ingest import blocks
from warehouse.ingest.base import Parsed, ReadContext, ReadOptions, Source, register
from warehouse.ingest.csvtrace import blocks_of, epoch_time, keep_good, local_time, number

PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
ALIBABA_COLUMNS = ("value", "timestamp_anon", "container_ip")

#: gpu_time is printed with one decimal; a product further off than this is not the same job.
_GPU_TIME_SLACK_S = 1.0


@register("philly", "the Philly job trace CSV (timestamp,duration,num_gpus,gpu_time,cluster)")
def read_philly(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """Philly jobs, a chunk per block of lines; see the module docstring."""
    schema = context.schema("jobs")
    for block in blocks_of(stream, source, PHILLY_COLUMNS, "the Philly job trace"):
        gpus, duration, gpu_time = number("num_gpus"), number("duration"), number("gpu_time")
        vc = pl.col("raw_cluster")
        typed = block.rows.with_columns(
            job_id=pl.format("philly-{}", pl.col("line")),
            cluster=pl.lit(options.cluster or "philly", pl.String),
            account=pl.when(vc != "").then(vc),
            partition=pl.when(vc != "").then(vc),
            submit_at=local_time("timestamp", options.timezone),
            elapsed_s=duration,
            gpus=gpus.cast(pl.Int32, strict=False),
        )
        checks = [
            ("timestamp", pl.col("submit_at").is_null(), "not a time like 2017-10-09 07:01:55"),
            ("duration", ~(duration >= 0), "not a number of seconds ≥ 0"),
            ("num_gpus", ~((gpus >= 0) & (gpus == gpus.round(0))), "not a whole number ≥ 0"),
            (
                "gpu_time",
                ~((gpu_time - gpus * duration).abs() <= _GPU_TIME_SLACK_S),
                "not num_gpus × duration",
            ),
        ]
        good = keep_good(block, typed, checks)
        yield Parsed("jobs", blocks.arrow_rows(good, schema), block.rejects)


@register(
    "alibaba-duty-cycle",
    "Alibaba's GPU duty-cycle trace CSV (value,timestamp_anon,container_ip)",
)
def read_duty_cycle(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """GPU duty cycle samples (%) → `gpu_duty_cycle`."""
    yield from _samples(stream, source, options, context, "gpu_duty_cycle", "duty_cycle_pct")


@register(
    "alibaba-model-load",
    "Alibaba's model-loading latency trace CSV (timestamp_anon,value,container_ip)",
)
def read_model_load(
    stream: IO[bytes], source: Source, options: ReadOptions, context: ReadContext
) -> Iterator[Parsed]:
    """Model-loading (cold start) latencies (ms) → `model_load_latency`."""
    yield from _samples(stream, source, options, context, "model_load_latency", "latency_ms")


def _samples(
    stream: IO[bytes],
    source: Source,
    options: ReadOptions,
    context: ReadContext,
    table: str,
    value_column: str,
) -> Iterator[Parsed]:
    """One (time, container, value) sample per line, as both Alibaba GenAI traces give them."""
    schema = context.schema(table)
    what = f"the Alibaba GenAI trace for {table}"
    for block in blocks_of(stream, source, ALIBABA_COLUMNS, what):
        value, seconds = number("value"), number("timestamp_anon")
        container = pl.col("raw_container_ip")
        typed = block.rows.with_columns(
            ts=epoch_time(seconds),
            container=pl.when(container != "").then(container),
            cluster=pl.lit(options.cluster or "alibaba-genai", pl.String),
            **{value_column: value},
        )
        checks = [
            ("timestamp_anon", seconds.is_null() | seconds.is_nan(), "not epoch seconds"),
            ("container_ip", pl.col("container").is_null(), "no container"),
            ("value", ~(value >= 0), "not a number ≥ 0"),
        ]
        good = keep_good(block, typed, checks)
        yield Parsed(table, blocks.arrow_rows(good, schema), block.rejects)
