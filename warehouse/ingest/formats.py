"""Every ingest format, registered by importing its module (each calls `base.register`)."""

from __future__ import annotations

from warehouse.ingest import (  # noqa: F401
    dcgm,
    faults,
    kernel_log,
    nccl,
    nvidia_smi,
    pods,
    sacct,
    scontrol,
    tabular,
    traces,
)
