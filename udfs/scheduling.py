"""Scheduling and capacity: fragmentation, scale-out, billing granularity."""

from __future__ import annotations

from udfs.expr import Num, ceil, where
from udfs.model import model
from udfs.params import Relation, integer, non_negative, positive

#: ceil() of a quotient of decimal quantities must not bill an extra unit for a rounding error
#: (1.1 / 0.1 is 11.000000000000002 in binary floating point): shave 1e-12 relative first.
_CEIL_GUARD = 1 - 1e-12


@model(
    "INTEGER",
    "GPUs",
    example=(5, 8, 2),
    free_gpus=integer(0, units="GPUs free on the node"),
    gpus_per_node=integer(1, units="GPUs"),
    job_gpus=integer(1, units="GPUs the job asks for"),
    relations=(
        Relation("free_gpus", "<= gpus_per_node", lambda free, per_node, job: free <= per_node),
    ),
)
def stranded_gpus(free_gpus: Num, gpus_per_node: Num, job_gpus: Num) -> Num:
    """Free GPUs on a node that a job of `job_gpus` GPUs cannot use.

    Formula:
        a job that fits in one node (job_gpus <= gpus_per_node) takes whole multiples of its
        size, so free_gpus mod job_gpus stay idle; a multi-node job takes whole nodes only, so
        every free GPU of a partly busy node (free_gpus < gpus_per_node) is stranded and a fully
        free node strands none.

    Units:
        GPUs.

    Source:
        the GPU fragmentation measure of Weng et al., "Beware of Fragmentation: Scheduling
        GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023, for
        whole-GPU tasks.

    Example:
        >>> stranded_gpus(5, 8, 2), stranded_gpus(5, 8, 16), stranded_gpus(8, 8, 16)
        (1, 5, 0)
    """
    in_node = free_gpus % job_gpus
    whole_nodes = where(free_gpus < gpus_per_node, free_gpus, 0)
    return where(job_gpus <= gpus_per_node, in_node, whole_nodes)


@model(
    "DOUBLE",
    "s",
    example=(1000, 30, 64),
    instances=integer(0, units="instances"),
    cold_start_s=non_negative("s"),
    parallel_starts=integer(1, units="instances started at once"),
)
def scale_out_s(instances: Num, cold_start_s: Num, parallel_starts: Num) -> Num:
    """Time to start `instances` replicas when only `parallel_starts` can cold-start at once.

    Formula:
        ⌈instances / parallel_starts⌉ × cold_start_s (starts proceed in waves).

    Units:
        seconds.

    Source:
        the wave model of batched cold starts, as measured for model loading in the Alibaba
        GenAI trace (cluster-trace-v2026-GenAI, SoCC 2025: basemodel_update_latency).

    Example:
        >>> scale_out_s(1000, 30, 64)
        480.0
    """
    return ceil(instances / parallel_starts) * cold_start_s


@model(
    "DOUBLE",
    "currency",
    example=(61, 3.0, 3600),
    busy_s=non_negative("s"),
    price_per_hour=non_negative("currency per hour"),
    granularity_s=positive("s"),
)
def billed_cost(busy_s: Num, price_per_hour: Num, granularity_s: Num) -> Num:
    """What `busy_s` of use costs when billing rounds up to whole `granularity_s` units.

    Formula:
        ⌈busy_s / granularity_s⌉ × granularity_s × price_per_hour / 3600: per-hour billing
        charges 61 s as 3600 s, per-millisecond billing (granularity 0.001) as 61 s.

    Units:
        the currency of price_per_hour.

    Source:
        cloud billing granularity as published by providers (e.g. AWS EC2 per-second billing
        with a 60 s minimum; AWS Lambda per-millisecond billing since December 2020).

    Example:
        >>> billed_cost(61, 3.0, 3600), round(billed_cost(61, 3.0, 0.001), 6)
        (3.0, 0.050833)
    """
    units = ceil(busy_s / granularity_s * _CEIL_GUARD)
    return units * granularity_s * price_per_hour / 3600
