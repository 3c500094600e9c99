"""Host links and networks: PCIe slots, NICs, NVLink, long-haul fibre.

Bandwidth in GB/s is 1e9 bytes per second per direction unless a name says otherwise; line rates
in Gb/s are 1e9 bits per second, as NIC vendors quote them.
"""

from __future__ import annotations

from udfs.expr import Num, cases, minimum, where
from udfs.model import model
from udfs.params import flag, integer, non_negative, positive

#: Transfer rate per lane in GT/s, by PCIe generation (PCI-SIG base specifications 1.0-7.0).
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0, 7: 128.0}
#: Fraction of the line rate that carries data: 8b/10b (Gen1-2), 128b/130b (Gen3-5), and for the
#: PAM4 generations the 256-byte FLIT of which 242 bytes are TLP and DLLP payload (6 bytes FEC,
#: 8 bytes CRC; PCIe 6.0 base specification, FLIT mode).
PCIE_ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}
PCIE_ENCODING[7] = PCIE_ENCODING[6]
#: Usable GB/s per lane and direction.
PCIE_LANE_GBS = {gen: gts * PCIE_ENCODING[gen] / 8 for gen, gts in PCIE_GTS.items()}
#: One way through silica fibre: group index ~1.47 gives c/1.47 = 204,000 km/s, 4.9 us per km.
FIBRE_MS_PER_KM = 4.9e-3

pcie_generation = integer(1, 7, units="PCIe generation")
pcie_lane_count = integer(1, 32, units="lanes")
line_rate = non_negative("Gb/s")


@model("DOUBLE", "GB/s per direction", example=(4, 16), gen=pcie_generation, lanes=pcie_lane_count)
def pcie_gbs(gen: Num, lanes: Num) -> Num:
    """Usable PCIe bandwidth per direction after line encoding.

    Formula:
        GT/s per lane × encoding efficiency / 8 × lanes, with 2.5, 5, 8, 16, 32, 64, 128 GT/s
        per lane for Gen1-7 and the encoding 8b/10b for Gen1-2, 128b/130b for Gen3-5 and the
        242/256 FLIT for Gen6-7. Packet headers are not subtracted, so this is the ceiling a
        DMA engine approaches.

    Units:
        gigabytes (1e9 B) per second in each direction.

    Source:
        PCI-SIG PCI Express Base Specification 2.0 (8b/10b), 3.0 (128b/130b), 6.0 (FLIT).

    Example:
        >>> round(pcie_gbs(4, 16), 2), round(pcie_gbs(3, 8), 2), round(pcie_gbs(5, 16), 2)
        (31.51, 7.88, 63.02)
    """
    return cases([(gen == g, per_lane) for g, per_lane in PCIE_LANE_GBS.items()]) * lanes


@model("DOUBLE", "GB/s", example=(200,), line_rate_gbps=line_rate)
def nic_gbs(line_rate_gbps: Num) -> Num:
    """A NIC's line rate in gigabytes per second.

    Formula:
        Gb/s / 8.

    Units:
        GB/s (1e9 B/s) per direction.

    Source:
        IEEE 802.3 and InfiniBand rates are quoted in bits per second of data after encoding
        (e.g. 200GBASE, HDR 200 Gb/s), so only the bits-to-bytes factor applies.

    Example:
        >>> nic_gbs(200), nic_gbs(400)
        (25.0, 50.0)
    """
    return line_rate_gbps / 8


@model(
    "DOUBLE",
    "GB/s per direction",
    example=(400, 4, 16),
    line_rate_gbps=line_rate,
    pcie_gen=pcie_generation,
    pcie_lanes=pcie_lane_count,
)
def nic_effective_gbs(line_rate_gbps: Num, pcie_gen: Num, pcie_lanes: Num) -> Num:
    """What a NIC can move: the lesser of its line rate and the PCIe slot behind it.

    Formula:
        min(line_rate_gbps / 8, pcie_gbs(pcie_gen, pcie_lanes)).

    Units:
        GB/s per direction.

    Source:
        line rate as in `nic_gbs`, slot as in `pcie_gbs`; a 400 Gb/s ConnectX-7 needs a Gen5 x16
        slot (NVIDIA ConnectX-7 datasheet), in Gen4 x16 it is capped near 31.5 GB/s.

    Example:
        >>> round(nic_effective_gbs(400, 4, 16), 2), nic_effective_gbs(400, 5, 16)
        (31.51, 50.0)
    """
    return minimum(nic_gbs.formula(line_rate_gbps), pcie_gbs.formula(pcie_gen, pcie_lanes))


@model(
    "VARCHAR",
    "'nic' or 'pcie'",
    example=(400, 4, 16),
    line_rate_gbps=line_rate,
    pcie_gen=pcie_generation,
    pcie_lanes=pcie_lane_count,
)
def nic_bottleneck(line_rate_gbps: Num, pcie_gen: Num, pcie_lanes: Num) -> Num:
    """Which of NIC and PCIe slot limits the host's network bandwidth: 'nic' or 'pcie'.

    Formula:
        'nic' when line_rate_gbps / 8 <= pcie_gbs(pcie_gen, pcie_lanes), else 'pcie' (a tie
        counts as 'nic': the port is the one running full).

    Source:
        as `nic_effective_gbs`.

    Example:
        >>> nic_bottleneck(400, 4, 16), nic_bottleneck(200, 4, 16)
        ('pcie', 'nic')
    """
    nic = nic_gbs.formula(line_rate_gbps)
    return where(nic <= pcie_gbs.formula(pcie_gen, pcie_lanes), "nic", "pcie")


@model(
    "DOUBLE",
    "GB/s",
    example=(8, 400, 4, 16),
    nic_count=integer(0, units="NICs"),
    line_rate_gbps=line_rate,
    pcie_gen=pcie_generation,
    pcie_lanes=pcie_lane_count,
)
def node_nic_gbs(nic_count: Num, line_rate_gbps: Num, pcie_gen: Num, pcie_lanes: Num) -> Num:
    """All compute NICs of a node together, each capped by its own PCIe slot (per direction).

    Formula:
        nic_count × nic_effective_gbs(line_rate_gbps, pcie_gen, pcie_lanes); the value
        `allreduce_s` takes as `node_nic_gbs`.

    Units:
        GB/s per direction.

    Source:
        as `nic_effective_gbs`; one NIC per GPU on its own PCIe switch as in NVIDIA DGX H100 (8
        × ConnectX-7).

    Example:
        >>> node_nic_gbs(8, 400, 5, 16)
        400.0
    """
    return nic_count * nic_effective_gbs.formula(line_rate_gbps, pcie_gen, pcie_lanes)


@model(
    "DOUBLE",
    "GB/s",
    example=(12, 25, True),
    links=integer(0, units="links"),
    gbs_per_link_per_dir=non_negative("GB/s"),
    bidirectional=flag("both directions summed"),
)
def nvlink_gbs(links: Num, gbs_per_link_per_dir: Num, bidirectional: Num) -> Num:
    """Scale-up bandwidth of one GPU: links × per-link rate, one or both directions.

    Formula:
        links × gbs_per_link_per_dir × (2 if bidirectional else 1).

    Units:
        GB/s; vendors quote the bidirectional sum (A100: 600 GB/s, H100: 900 GB/s).

    Source:
        NVIDIA A100 Tensor Core GPU Architecture whitepaper (12 third-generation NVLinks, 25
        GB/s per direction each, 600 GB/s total); H100 whitepaper (18 links, 900 GB/s).

    Example:
        >>> nvlink_gbs(12, 25, True), nvlink_gbs(18, 25, False)
        (600.0, 450.0)
    """
    return links * gbs_per_link_per_dir * where(bidirectional, 2, 1)


@model("DOUBLE", "ms", example=(1000,), km=non_negative("km"))
def fiber_rtt_ms(km: Num) -> Num:
    """Round-trip time of light through `km` of fibre, without switching or queueing.

    Formula:
        2 × km × 4.9 µs (light travels at c / 1.47 in silica fibre).

    Units:
        milliseconds.

    Source:
        ITU-T G.652 single-mode fibre, group index about 1.47 at 1550 nm.

    Example:
        >>> round(fiber_rtt_ms(1000), 3)
        9.8
    """
    return 2 * km * FIBRE_MS_PER_KM


@model(
    "DOUBLE",
    "fraction",
    example=(1.0, 10e9, 12.5, 9.8),
    step_compute_s=positive("s"),
    sync_bytes=non_negative("B"),
    wan_gbs=positive("GB/s"),
    rtt_ms=non_negative("ms"),
)
def cross_site_efficiency(step_compute_s: Num, sync_bytes: Num, wan_gbs: Num, rtt_ms: Num) -> Num:
    """Share of a step spent computing when each step synchronises across sites, unhidden.

    Formula:
        compute / (compute + sync_bytes / (wan_gbs × 1e9) + rtt_ms / 1000): the step waits for
        its bytes to cross the WAN and for one round trip.

    Units:
        fraction in (0, 1].

    Source:
        the α–β (latency–bandwidth) cost model of Hockney (1994) applied to one exchange.

    Example:
        >>> round(cross_site_efficiency(1.0, 10e9, 12.5, 9.8), 3)
        0.553
    """
    wan_s = sync_bytes / (wan_gbs * 1e9) + rtt_ms / 1000
    return step_compute_s / (step_compute_s + wan_s)
