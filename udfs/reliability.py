"""Reliability: failure rates of GPUs and of jobs that span many of them.

GPUs are taken to fail independently at constant rates (exponential lifetimes), so rates add:
a job on n GPUs is interrupted n times as often as one GPU fails.
"""

from __future__ import annotations

from udfs.expr import Num
from udfs.model import model
from udfs.params import integer, non_negative, positive

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
