"""Collective communication: nccl-tests bus bandwidth and α–β all-reduce times.

`bytes` is the message size as nccl-tests reports it (the `size` column); bandwidths are GB/s
(1e9 B/s) per direction.
"""

from __future__ import annotations

from udfs.expr import Choice, Num, Text, ceil, log2, minimum, where
from udfs.model import model
from udfs.params import choice, integer, non_negative, positive

#: nccl-tests names (`all_reduce_perf` ...) with NCCL's own spellings as aliases.
COLLECTIVES = Choice(
    {
        "all_reduce": ("allreduce",),
        "all_gather": ("allgather",),
        "reduce_scatter": ("reducescatter",),
        "all_to_all": ("alltoall",),
        "gather": (),
        "scatter": (),
        "broadcast": ("bcast",),
        "reduce": (),
        "sendrecv": (),
    }
)
ALGORITHMS = Choice({"hierarchical": (), "ring": (), "tree": ()})

collective_name = choice(COLLECTIVES)
rank_count = integer(1, units="ranks")


@model("DOUBLE", "ratio", example=("all_reduce", 16), collective=collective_name, ranks=rank_count)
def busbw_factor(collective: Text, ranks: Num) -> Num:
    """Bus bandwidth over algorithm bandwidth for a collective on `ranks` ranks.

    Formula:
        all_reduce 2(n−1)/n; all_gather, reduce_scatter, all_to_all, gather, scatter (n−1)/n;
        broadcast, reduce, sendrecv 1.

    Units:
        dimensionless.

    Source:
        NVIDIA nccl-tests doc/PERFORMANCE.md ("Bus bandwidth"): busbw = algbw × factor, so that
        busbw is comparable to the hardware's peak link bandwidth whatever the rank count.

    Example:
        >>> busbw_factor("all_reduce", 16), busbw_factor("AllGather", 8), busbw_factor("reduce", 4)
        (1.875, 0.875, 1.0)
    """
    n = ranks
    share = (n - 1) / n
    return COLLECTIVES.pick(
        collective,
        {
            "all_reduce": 2 * share,
            "all_gather": share,
            "reduce_scatter": share,
            "all_to_all": share,
            "gather": share,
            "scatter": share,
            "broadcast": 1.0,
            "reduce": 1.0,
            "sendrecv": 1.0,
        },
    )


@model(
    "DOUBLE",
    "GB/s",
    example=("all_reduce", 16, 8589934592, 0.047535),
    collective=collective_name,
    ranks=rank_count,
    bytes=non_negative("B"),
    seconds=positive("s"),
)
def busbw_gbs(collective: Text, ranks: Num, bytes: Num, seconds: Num) -> Num:
    """nccl-tests bus bandwidth of one measured collective.

    Formula:
        bytes / seconds / 1e9 × busbw_factor(collective, ranks); bytes / seconds / 1e9 is
        nccl-tests' algbw.

    Units:
        GB/s (1e9 B/s).

    Source:
        NVIDIA nccl-tests doc/PERFORMANCE.md. A published all_reduce_perf run on 16 H100 (2
        nodes × 8) reports 8 GiB in 47535 µs: algbw 180.71, busbw 338.82.

    Example:
        >>> round(busbw_gbs("all_reduce", 16, 8589934592, 47535e-6), 1)
        338.8
    """
    return bytes / seconds / 1e9 * busbw_factor.formula(collective, ranks)


@model(
    "DOUBLE",
    "s",
    example=("all_reduce", 16, 8589934592, 338.8),
    collective=collective_name,
    ranks=rank_count,
    bytes=non_negative("B"),
    bus_gbs=positive("GB/s"),
)
def collective_s(collective: Text, ranks: Num, bytes: Num, bus_gbs: Num) -> Num:
    """Time of a collective of `bytes` at a given bus bandwidth (inverse of `busbw_gbs`).

    Formula:
        bytes × busbw_factor(collective, ranks) / (bus_gbs × 1e9).

    Units:
        seconds.

    Source:
        NVIDIA nccl-tests doc/PERFORMANCE.md (busbw = algbw × factor, algbw = bytes / time).

    Example:
        >>> round(collective_s("all_reduce", 16, 8589934592, 338.82), 4)
        0.0475
    """
    return bytes * busbw_factor.formula(collective, ranks) / (bus_gbs * 1e9)


@model(
    "DOUBLE",
    "s",
    example=(1e9, 1024, 8, 450, 400, "hierarchical", 5),
    bytes=non_negative("B"),
    gpus=integer(1, units="GPUs"),
    gpus_per_node=integer(1, units="GPUs"),
    nvlink_gbs=positive("GB/s per GPU per direction"),
    node_nic_gbs=positive("GB/s per node per direction"),
    algorithm=choice(ALGORITHMS),
    latency_us=non_negative("µs per step"),
)
def allreduce_s(
    bytes: Num,
    gpus: Num,
    gpus_per_node: Num,
    nvlink_gbs: Num,
    node_nic_gbs: Num,
    algorithm: Text,
    latency_us: Num,
) -> Num:
    """α–β time of one all-reduce of `bytes` over `gpus` GPUs, `gpus_per_node` to a node.

    The job spans N = ⌈gpus / g⌉ nodes of g = min(gpus, gpus_per_node) GPUs; B_nvlink is one
    GPU's NVLink bandwidth per direction, B_node all NICs of a node per direction, α the
    per-step latency, S the bytes.

    Formula:
        'hierarchical' (reduce-scatter in the node, all-reduce across nodes, all-gather in the
        node): 2(g−1)/g·S/B_nvlink + 2(N−1)/N·S/B_node + (2(g−1) + 2(N−1))·α.

        'ring' (one flat ring of p = gpus ranks, each step as slow as its slowest hop):
        2(p−1)/p·S/B + 2(p−1)·α, with B = B_nvlink in one node, else min(B_nvlink, B_node/g).

        'tree': the hierarchical bandwidth terms with 2(g−1)·α + 2·log2(N)·α latency.

    Units:
        seconds (bandwidths in GB/s = 1e9 B/s, latency in µs).

    Source:
        Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication Operations
        in MPICH", IJHPCA 19(1), 2005 (ring all-reduce as reduce-scatter + all-gather,
        2(p−1)α + 2(p−1)/p·nβ); Patarasuk and Yuan, JPDC 69(2), 2009 (bandwidth-optimal ring).

    Example:
        >>> round(allreduce_s(1e9, 8, 8, 450, 400, "ring", 0), 5)
        0.00389
    """
    # each name below is inlined into the SQL wherever it is used, and DuckDB does not share
    # common subexpressions inside a CASE: the terms are arranged to read g and N few times
    g = minimum(gpus_per_node, gpus)
    nodes = ceil(gpus / g)
    alpha = latency_us * 1e-6
    bandwidth_terms = 2 * (
        (1 - 1 / g) * bytes / (nvlink_gbs * 1e9) + (1 - 1 / nodes) * bytes / (node_nic_gbs * 1e9)
    )
    per_rank_gbs = where(nodes > 1, minimum(nvlink_gbs, node_nic_gbs / g), nvlink_gbs)
    ring = 2 * (gpus - 1) * (bytes / gpus / (per_rank_gbs * 1e9) + alpha)
    return ALGORITHMS.pick(
        algorithm,
        {
            "hierarchical": bandwidth_terms + 2 * (g + nodes - 2) * alpha,
            "ring": ring,
            "tree": bandwidth_terms + 2 * (g - 1 + log2(nodes)) * alpha,
        },
    )
