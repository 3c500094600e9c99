"""Checkpoints: how big, how fast they leave a node, how long training stalls, how often.

δ (delta) is the time to write one checkpoint, M the mean time between interruptions of the
job, τ (tau) the compute time between checkpoints, R the time to restart.
"""

from __future__ import annotations

import math

from udfs.expr import Choice, Num, Text, minimum, sqrt, where
from udfs.model import model
from udfs.params import choice, integer, non_negative, positive

PRECISIONS = Choice({"bf16": ("bfloat16",), "fp16": ("float16", "half"), "fp32": ("float32",)})
OPTIMIZERS = Choice({"adam": (), "adamw": (), "sgd": ("momentum",), "none": ()})
#: Linux bonding modes (Documentation/networking/bonding.rst) by name and `bondN` number.
BOND_MODES = Choice(
    {
        "none": (),
        "balance-rr": ("bond0",),
        "active-backup": ("bond1",),
        "balance-xor": ("bond2",),
        "broadcast": ("bond3",),
        "802.3ad": ("bond4", "lacp"),
        "balance-tlb": ("bond5",),
        "balance-alb": ("bond6",),
    }
)

checkpoint_time = non_negative("s")
mtbf = positive("s")


@model(
    "DOUBLE",
    "B per parameter",
    example=("bf16", "adamw"),
    precision=choice(PRECISIONS),
    optimizer=choice(OPTIMIZERS),
)
def checkpoint_bytes_per_param(precision: Text, optimizer: Text) -> Num:
    """Bytes of resumable training state per model parameter.

    Formula:
        weights (bf16/fp16 2, fp32 4) + fp32 master copy (4, only when the weights are 16-bit) +
        optimizer state (Adam/AdamW 8: two fp32 moments; SGD with momentum 4); with optimizer
        'none' only the weights. bf16 + adamw = 2 + 4 + 8 = 14; fp32 + adam = 12. Gradients are
        not saved. FP8 training keeps 16- or 32-bit weights: pass those.

    Units:
        bytes per parameter.

    Source:
        Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
        Models", SC 2020, section 3.1 (mixed-precision Adam holds 2Ψ + 2Ψ + 12Ψ bytes; without
        the gradients, 14Ψ).

    Example:
        >>> checkpoint_bytes_per_param("bf16", "adamw"), checkpoint_bytes_per_param("fp32", "adam")
        (14.0, 12.0)
    """

    def state(weights: float, master: float) -> Num:
        moments = {"adam": 8.0, "adamw": 8.0, "sgd": 4.0}
        kept = {name: weights + master + size for name, size in moments.items()}
        return OPTIMIZERS.pick(optimizer, {**kept, "none": weights})

    return PRECISIONS.pick(
        precision, {"bf16": state(2.0, 4.0), "fp16": state(2.0, 4.0), "fp32": state(4.0, 0.0)}
    )


@model(
    "DOUBLE",
    "B",
    example=(7e9, "bf16", "adamw"),
    params=non_negative("parameters"),
    precision=choice(PRECISIONS),
    optimizer=choice(OPTIMIZERS),
)
def checkpoint_bytes(params: Num, precision: Text, optimizer: Text) -> Num:
    """Bytes of a full resumable checkpoint of a model with `params` parameters.

    Formula:
        params × checkpoint_bytes_per_param(precision, optimizer).

    Units:
        bytes.

    Source:
        as `checkpoint_bytes_per_param`; a 7B model in bf16 with AdamW is 98 GB.

    Example:
        >>> checkpoint_bytes(7e9, "bf16", "adamw") / 1e9
        98.0
    """
    return params * checkpoint_bytes_per_param.formula(precision, optimizer)


@model(
    "DOUBLE",
    "GB/s",
    example=(25, 2, "802.3ad", 2),
    nic_gbps=non_negative("Gb/s per NIC"),
    nic_count=integer(1, units="NICs"),
    bond_mode=choice(BOND_MODES),
    flows=integer(1, units="TCP/RDMA flows"),
)
def link_write_gbs(nic_gbps: Num, nic_count: Num, bond_mode: Text, flows: Num) -> Num:
    """Usable write bandwidth of a node's storage NICs for a given bond mode and flow count.

    Formula:
        nic_gbps / 8 × NICs used, where NICs used is 1 for 'none', 'active-backup' and
        'broadcast'; nic_count for 'balance-rr' (packets sprayed over every link); and
        min(flows, nic_count) for '802.3ad', 'balance-xor', 'balance-tlb', 'balance-alb', which
        hash each flow onto one link, so one flow never exceeds one NIC.

    Units:
        GB/s.

    Source:
        Linux kernel Documentation/networking/bonding.rst ("Bonding Driver Modes": a single
        connection is never spread over several interfaces except in balance-rr).

    Example:
        >>> link_write_gbs(25, 2, "802.3ad", 1), link_write_gbs(25, 2, "lacp", 2)
        (3.125, 6.25)
    """
    spread = minimum(flows, nic_count)
    links = BOND_MODES.pick(
        bond_mode,
        {
            "none": 1,
            "balance-rr": nic_count,
            "active-backup": 1,
            "balance-xor": spread,
            "broadcast": 1,
            "802.3ad": spread,
            "balance-tlb": spread,
            "balance-alb": spread,
        },
    )
    return nic_gbps / 8 * links


@model(
    "DOUBLE",
    "s",
    example=(98e9, 1, 3.125, math.inf),
    bytes=non_negative("B"),
    writer_nodes=integer(1, units="nodes"),
    node_write_gbs=positive("GB/s per node"),
    storage_gbs=positive("GB/s, 'inf' for unlimited"),
)
def checkpoint_write_s(bytes: Num, writer_nodes: Num, node_write_gbs: Num, storage_gbs: Num) -> Num:
    """Time to persist a checkpoint written in parallel by `writer_nodes` nodes.

    Formula:
        bytes / (min(writer_nodes × node_write_gbs, storage_gbs) × 1e9): the nodes' links or the
        storage system, whichever is slower. Pass 'inf'::DOUBLE for storage that is not the
        limit.

    Units:
        seconds.

    Source:
        the bottleneck bound of parallel I/O (aggregate client links vs. storage throughput),
        the limit that Gemini (Wang et al., SOSP 2023) cites for remote checkpoints.

    Example:
        >>> round(checkpoint_write_s(98e9, 1, 3.125, float("inf")), 2)
        31.36
    """
    return bytes / (minimum(writer_nodes * node_write_gbs, storage_gbs) * 1e9)


@model(
    "DOUBLE",
    "s",
    example=(98e9, 8, 25),
    bytes=non_negative("B"),
    gpus=integer(1, units="GPUs"),
    d2h_gbs=positive("GB/s device-to-host per GPU"),
)
def checkpoint_stall_s(bytes: Num, gpus: Num, d2h_gbs: Num) -> Num:
    """Training time blocked by a two-stage asynchronous checkpoint.

    Formula:
        (bytes / gpus) / (d2h_gbs × 1e9): each GPU copies its shard of the state to host memory
        in parallel, training resumes, and persisting to storage overlaps the next steps.

    Units:
        seconds.

    Source:
        Mohan et al., "CheckFreq: Frequent, Fine-Grained DNN Checkpointing", FAST 2021 (snapshot
        to host memory, then persist in the background).

    Example:
        >>> checkpoint_stall_s(98e9, 8, 25)
        0.49
    """
    return bytes / gpus / (d2h_gbs * 1e9)


@model("DOUBLE", "s", example=(60, 86400), checkpoint_s=checkpoint_time, mtbf_s=mtbf)
def young_interval_s(checkpoint_s: Num, mtbf_s: Num) -> Num:
    """Young's first-order optimum compute time between checkpoints.

    Formula:
        τ = √(2δM).

    Units:
        seconds.

    Source:
        J. W. Young, "A first order approximation to the optimum checkpoint interval",
        Communications of the ACM 17(9), 1974.

    Example:
        >>> round(young_interval_s(60, 86400), 1)
        3219.9
    """
    return sqrt(2 * checkpoint_s * mtbf_s)


@model("DOUBLE", "s", example=(60, 86400), checkpoint_s=checkpoint_time, mtbf_s=mtbf)
def daly_interval_s(checkpoint_s: Num, mtbf_s: Num) -> Num:
    """Daly's higher-order optimum compute time between checkpoints.

    Formula:
        for δ < 2M, τ = √(2δM)·[1 + ⅓·√(δ/(2M)) + (1/9)·(δ/(2M))] − δ; else τ = M.

    Units:
        seconds.

    Source:
        J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
        dumps", Future Generation Computer Systems 22(3), 2006.

    Example:
        >>> round(daly_interval_s(60, 86400), 1), daly_interval_s(100, 40)
        (3180.1, 40.0)
    """
    ratio = checkpoint_s / (2 * mtbf_s)
    series = 1 + sqrt(ratio) / 3 + ratio / 9
    tau = sqrt(2 * checkpoint_s * mtbf_s) * series - checkpoint_s
    return where(checkpoint_s < 2 * mtbf_s, tau, mtbf_s)


@model(
    "DOUBLE",
    "fraction",
    example=(3600, 60, 86400, 600),
    interval_s=positive("s"),
    checkpoint_s=checkpoint_time,
    mtbf_s=mtbf,
    restart_s=non_negative("s"),
)
def checkpoint_waste_fraction(
    interval_s: Num, checkpoint_s: Num, mtbf_s: Num, restart_s: Num
) -> Num:
    """Fraction of machine time lost to checkpointing and failures.

    Formula: δ/τ + τ/(2M) + R/M: writing a checkpoint every τ, recomputing on average half an
    interval per failure, and restarting once per failure (first order; may exceed 1 when the
    settings cannot make progress). Units: fraction of wall time.

    Source: Young 1974 and Daly 2006 (the waste model whose minimum gives their intervals).

    >>> round(checkpoint_waste_fraction(3600, 60, 86400, 600), 4)
    0.0444
    """
    return checkpoint_s / interval_s + interval_s / (2 * mtbf_s) + restart_s / mtbf_s
