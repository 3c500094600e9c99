"""The DCGM fields the simulator reports, as dcgm-exporter names and describes them.

Help texts and Prometheus types are those of dcgm-exporter's `default-counters.csv` and
`dcp-metrics-included.csv` (etc/ @d5e5f51); the NVLink one is the DCGM field documentation's.
The per-model clock table holds published base/boost figures the GPU spec table does not carry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One DCGM field: its name, Prometheus type, help text, and whether values are integers."""

    name: str
    kind: str  # 'gauge' | 'counter'
    help: str
    integral: bool


METRICS: tuple[Metric, ...] = (
    Metric("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", True),
    Metric("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", True),
    Metric("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", True),
    Metric("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", False),
    Metric("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
           "Total energy consumption since boot (in mJ).", True),
    Metric("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", True),
    Metric("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", True),
    Metric("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", True),
    Metric("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", True),
    Metric("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter",
           "Total number of single-bit volatile ECC errors.", True),
    Metric("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter",
           "Total number of double-bit volatile ECC errors.", True),
    Metric("DCGM_FI_PROF_SM_ACTIVE", "gauge",
           "The ratio of cycles an SM has at least 1 warp assigned.", False),
    Metric("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
           "Ratio of cycles the tensor (HMMA) pipe is active.", False),
    Metric("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
           "The rate of data transmitted over the PCIe bus - including both protocol headers "
           "and data payloads - in bytes per second.", True),
    Metric("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
           "The rate of data received over the PCIe bus - including both protocol headers "
           "and data payloads - in bytes per second.", True),
    Metric("DCGM_FI_PROF_NVLINK_TX_BYTES", "gauge",
           "The rate of data transmitted over NVLink, not including protocol headers, in bytes "
           "per second.", True),
)  # fmt: skip
METRIC_INDEX = {m.name: i for i, m in enumerate(METRICS)}

#: (idle, max boost) SM clock in MHz as DCGM reports them; others get DEFAULT_CLOCKS.
CLOCKS_MHZ: dict[str, tuple[float, float]] = {
    "A100": (210, 1410), "A800": (210, 1410),
    "H100": (345, 1980), "H800": (345, 1980), "H200": (345, 1980), "H20": (345, 1980),
    "B200": (345, 1965), "GB200": (345, 2062), "B300": (345, 2032), "GB300": (345, 2032),
    "MI300X": (132, 2100), "Ascend 910B": (300, 1800),
}  # fmt: skip
DEFAULT_CLOCKS = (300.0, 1800.0)

#: Usable PCIe GB/s per direction of an x16 slot (128b/130b from Gen3, FLIT for Gen6).
PCIE_X16_GBS = {3: 15.75, 4: 31.51, 5: 63.02, 6: 121.0}

#: Driver version label by GPU vendor, and the device label prefix each exporter uses.
DRIVER_VERSION = {"NVIDIA": "570.124.06", "AMD": "6.10.5", "Huawei": "24.1.rc2"}
DEVICE_PREFIX = {"NVIDIA": "nvidia", "AMD": "card", "Huawei": "davinci"}
#: PCI bus ids of the eight GPUs of an HGX H100 board, slot order.
PCI_BUS_IDS = tuple(
    f"00000000:{bus}:00.0" for bus in ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
)
