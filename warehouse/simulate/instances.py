"""Each host's scrape target: the `instance` label Prometheus gives its dcgm-exporter."""

from __future__ import annotations

import numpy as np

EXPORTER_PORT = 9400  # dcgm-exporter's default listen port


def host_instances(host_cluster: np.ndarray) -> list[str]:
    """Each host's scrape target `<address>:9400`: one 10.<cluster>.0.0/16 network per cluster,
    hosts numbered in it in inventory order (distinct up to 65,534 hosts a cluster).

    >>> host_instances(np.array([0, 0, 1]))
    ['10.1.0.1:9400', '10.1.0.2:9400', '10.2.0.1:9400']
    """
    cluster = np.asarray(host_cluster, dtype=np.int64)
    order = np.argsort(cluster, kind="stable")
    rank = np.empty(len(cluster), dtype=np.int64)
    rank[order] = np.arange(len(cluster)) - np.searchsorted(cluster[order], cluster[order])
    number = rank % 65_534 + 1
    return [
        f"10.{c % 255 + 1}.{n >> 8}.{n & 255}:{EXPORTER_PORT}"
        for c, n in zip(cluster.tolist(), number.tolist(), strict=True)
    ]
