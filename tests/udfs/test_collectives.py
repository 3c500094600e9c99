"""nccl-tests bus bandwidth and α–β all-reduce times: published figures, invariants, SQL."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.udfs import contract
from udfs import collectives
from udfs.collectives import allreduce_s, busbw_factor, busbw_gbs, collective_s

test_from_sql, test_sql_agrees_with_python = contract.tests_for(collectives)


@pytest.mark.parametrize(
    ("collective", "factor"),
    [
        ("all_reduce", 2 * 7 / 8),
        ("all_gather", 7 / 8),
        ("reduce_scatter", 7 / 8),
        ("all_to_all", 7 / 8),
        ("broadcast", 1.0),
        ("reduce", 1.0),
        ("sendrecv", 1.0),
    ],
)
def test_busbw_factors_of_nccl_tests(collective: str, factor: float) -> None:
    assert busbw_factor(collective, 8) == pytest.approx(factor)


def test_names_ignore_case_and_take_nccl_spellings(con: duckdb.DuckDBPyConnection) -> None:
    for spelling in ("all_reduce", "ALL_REDUCE", "AllReduce", "allreduce"):
        assert busbw_factor(spelling, 4) == 1.5
        assert con.sql(f"SELECT busbw_factor('{spelling}', 4)").fetchall() == [(1.5,)]


def test_unknown_collective_is_an_error(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(
        ValueError, match=r"busbw_factor: collective must be one of .* got 'allsum'"
    ):
        busbw_factor("allsum", 4)
    with pytest.raises(
        duckdb.Error, match=r"busbw_factor: collective must be one of .* got 'allsum'"
    ):
        con.sql("SELECT busbw_factor('allsum', 4)").fetchall()


def test_published_all_reduce_row_on_16_h100() -> None:
    """nccl-tests all_reduce_perf, 2 nodes × 8 H100: 8 GiB in 47535 µs, algbw 180.71, busbw
    338.82 (github.com/lessizzmore/create-a3mega-ztan-fork, ztan-NCCL-test-result)."""
    size, seconds = 8589934592, 47535e-6
    assert size / seconds / 1e9 == pytest.approx(180.71, abs=0.01)
    assert busbw_gbs("all_reduce", 16, size, seconds) == pytest.approx(338.82, abs=0.02)
    assert collective_s("all_reduce", 16, size, 338.82) == pytest.approx(seconds, rel=1e-4)


@given(st.sampled_from(collectives.COLLECTIVES.spellings), st.integers(1, 4096), st.floats(1, 1e12))
def test_collective_s_inverts_busbw_gbs(collective: str, ranks: int, size: float) -> None:
    bus = busbw_gbs(collective, ranks, size, 0.5)
    if bus > 0:
        assert collective_s(collective, ranks, size, bus) == pytest.approx(0.5)


def test_ring_in_one_node_is_the_textbook_formula() -> None:
    """Thakur et al.: 2(p−1)/p · S/B + 2(p−1)·α."""
    size, p, bw, alpha_us = 1e9, 8, 450.0, 5.0
    expected = 2 * (p - 1) / p * size / (bw * 1e9) + 2 * (p - 1) * alpha_us * 1e-6
    assert allreduce_s(size, p, 8, bw, 400, "ring", alpha_us) == pytest.approx(expected)
    # in one node the hierarchical schedule is the same ring
    assert allreduce_s(size, p, 8, bw, 400, "hierarchical", alpha_us) == pytest.approx(expected)


def test_hierarchical_across_nodes() -> None:
    size, gpus, per_node, nv, nic, alpha = 1e9, 1024, 8, 450.0, 400.0, 5.0
    nodes = gpus // per_node
    expected = (
        2 * 7 / 8 * size / (nv * 1e9)
        + 2 * (nodes - 1) / nodes * size / (nic * 1e9)
        + (2 * 7 + 2 * (nodes - 1)) * alpha * 1e-6
    )
    assert allreduce_s(size, gpus, per_node, nv, nic, "hierarchical", alpha) == pytest.approx(
        expected
    )


def test_tree_latency_grows_with_log_of_nodes() -> None:
    hier = allreduce_s(8, 1024, 8, 450, 400, "hierarchical", 5)
    tree = allreduce_s(8, 1024, 8, 450, 400, "tree", 5)
    assert tree < hier  # tiny message: latency-bound, log2(128) = 7 steps instead of 127
    assert tree == pytest.approx(hier - (2 * 127 - 2 * 7) * 5e-6, rel=1e-6)


def test_flat_ring_across_nodes_runs_at_the_nic_share_of_a_gpu() -> None:
    # 8 GPUs share 400 GB/s of NICs: 50 GB/s per ring hop between nodes
    t = allreduce_s(1e9, 16, 8, 450, 400, "ring", 0)
    assert t == pytest.approx(2 * 15 / 16 * 1e9 / 50e9)


def test_partial_node_job_uses_only_its_gpus() -> None:
    assert allreduce_s(1e9, 4, 8, 450, 400, "hierarchical", 0) == pytest.approx(
        2 * 3 / 4 * 1e9 / 450e9
    )


@given(
    st.floats(1, 1e11),
    st.integers(1, 8192),
    st.sampled_from([1, 4, 8]),
    st.sampled_from(["hierarchical", "ring", "tree"]),
)
def test_more_bandwidth_never_slows_an_all_reduce(
    size: float, gpus: int, per_node: int, algo: str
) -> None:
    slow = allreduce_s(size, gpus, per_node, 100, 50, algo, 5)
    fast = allreduce_s(size, gpus, per_node, 200, 100, algo, 5)
    assert fast <= slow
