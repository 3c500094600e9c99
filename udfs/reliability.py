"""Reliability: failure rates of GPUs and of jobs that span many of them.

GPUs are taken to fail independently at constant rates (exponential lifetimes), so rates add:
a job on n GPUs is interrupted n times as often as one GPU fails.
"""

from __future__ import annotations

from udfs.expr import Num, exp, where
from udfs.model import model
from udfs.params import integer, non_negative, positive

#: GPUs per node that a rate per 1,000 node-days counts (HGX/DGX servers, Llama 3's hosts).
GPUS_PER_NODE = 8

gpu_count = integer(1, units="GPUs")


@model(
    "DOUBLE",
    "h",
    example=(419, 16384, 1296),
    failures=non_negative("failures"),
    gpus=gpu_count,
    hours=positive("h"),
)
def gpu_mtbf_h(failures: Num, gpus: Num, hours: Num) -> Num:
    """Per-GPU mean time between failures implied by failures seen over gpus × hours.

    Formula:
        gpus × hours / failures (device-hours per failure); no failures gives +inf.

    Units:
        hours.

    Source:
        the maximum-likelihood estimate of an exponential failure rate (failures over exposure).
        Calibration: Llama 3 pre-training saw 419 unexpected interruptions in 54 days on 16,384
        H100 (Dubey et al., "The Llama 3 Herd of Models", 2024, section 3.3.4).

    Example:
        >>> round(gpu_mtbf_h(419, 16384, 54 * 24))
        50677
    """
    return gpus * hours / failures


@model("DOUBLE", "h", example=(50677, 16384), gpu_mtbf_h=positive("h"), gpus=gpu_count)
def cluster_mtbf_h(gpu_mtbf_h: Num, gpus: Num) -> Num:
    """Mean time between interruptions of a job spanning `gpus` GPUs.

    Formula:
        gpu_mtbf_h / gpus (independent failures: the job stops when any GPU fails).

    Units:
        hours.

    Source:
        series-system reliability with exponential lifetimes; Llama 3 (2024) reports one
        interruption about every 3 hours on 16,384 GPUs.

    Example:
        >>> round(cluster_mtbf_h(50677, 16384), 2)
        3.09
    """
    return gpu_mtbf_h / gpus


@model(
    "DOUBLE",
    "interruptions",
    example=(16384, 1296, 50677),
    gpus=gpu_count,
    hours=non_negative("h"),
    gpu_mtbf_h=positive("h"),
)
def expected_interruptions(gpus: Num, hours: Num, gpu_mtbf_h: Num) -> Num:
    """Expected interruptions of a `gpus`-GPU job running `hours`.

    Formula:
        gpus × hours / gpu_mtbf_h.

    Units:
        count (expected value).

    Source:
        exponential failure model as in `cluster_mtbf_h`.

    Example:
        >>> round(expected_interruptions(16384, 54 * 24, 50677))
        419
    """
    return gpus * hours / gpu_mtbf_h


@model(
    "DOUBLE",
    "probability",
    example=(1024, 24, 3.79),
    gpus=gpu_count,
    hours=non_negative("h"),
    faults_per_1k_node_days=non_negative("faults per 1,000 node-days"),
)
def interruption_probability(gpus: Num, hours: Num, faults_per_1k_node_days: Num) -> Num:
    """Probability that a `gpus`-GPU job running `hours` is interrupted at least once.

    Formula:
        1 − exp(−x), x = r / 1000 × gpus / 8 × hours / 24, r the fleet's faults per 1,000 node-days
        of 8-GPU nodes: failures arrive as a Poisson process whose rate grows with the nodes the
        job spans. `job_interruption_risk(gpus, hours)` calls it at the fleet's measured rate.

    Units:
        probability in [0, 1].

    Source:
        exponential lifetimes as in `cluster_mtbf_h`. Calibration: Llama 3 saw 3.79 unexpected
        interruptions per 1,000 node-days (419 in 54 days on 2,048 hosts; Dubey et al. 2024,
        section 3.3.4), at which a 1,024-GPU job is interrupted within 24 h with p ≈ 0.38.

    Example:
        >>> round(interruption_probability(1024, 24, 3.79), 3)
        0.384
    """
    expected = faults_per_1k_node_days / 1000 * gpus / GPUS_PER_NODE * hours / 24
    # 1 − exp(−x) loses its digits for small x, where the series is exact to double precision
    series = expected * (1 - expected / 2 * (1 - expected / 3 * (1 - expected / 4)))
    return where(expected < 1e-3, series, 1 - exp(-expected))
