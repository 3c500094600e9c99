"""What each `nvidia-smi --query-gpu` field becomes in `gpu_metrics`, and how its value reads.

Numeric fields become rows under their DCGM field name, so nvidia-smi and dcgm-exporter data
answer the same queries (units are the same: W, %, MiB, MHz, °C):

    nvidia-smi field                          metric (DCGM_FI_DEV_...)
    power.draw, else power.draw.instant       POWER_USAGE (W)
    power.draw.instant beside power.draw      POWER_USAGE_INSTANT (W)
    utilization.gpu / .memory                 GPU_UTIL / MEM_COPY_UTIL (%)
    utilization.encoder / .decoder            ENC_UTIL / DEC_UTIL (%)
    memory.used / .free / .total / .reserved  FB_USED / FB_FREE / FB_TOTAL / FB_RESERVED (MiB)
    temperature.gpu / .memory                 GPU_TEMP / MEMORY_TEMP (°C)
    clocks.current.sm (alias clocks.sm)       SM_CLOCK (MHz)
    clocks.current.memory (alias clocks.mem)  MEM_CLOCK (MHz)
    clocks.current.video (alias clocks.video) VIDEO_CLOCK (MHz)
    clocks.max.sm / clocks.max.memory         MAX_SM_CLOCK / MAX_MEM_CLOCK (MHz)
    pcie.link.gen.current / .width.current    PCIE_LINK_GEN / PCIE_LINK_WIDTH
    pcie.link.gen.max / .width.max            PCIE_MAX_LINK_GEN / PCIE_MAX_LINK_WIDTH
    fan.speed                                 FAN_SPEED (%)
    power.limit / enforced.power.limit        POWER_MGMT_LIMIT / ENFORCED_POWER_LIMIT (W)
    power.default_limit / min_limit / max_limit  POWER_MGMT_LIMIT_DEF / _MIN / _MAX (W)
    ecc.errors.corrected.volatile.total       ECC_SBE_VOL_TOTAL
    ecc.errors.uncorrected.volatile.total     ECC_DBE_VOL_TOTAL
    ecc.errors.corrected.aggregate.total      ECC_SBE_AGG_TOTAL
    ecc.errors.uncorrected.aggregate.total    ECC_DBE_AGG_TOTAL
    retired_pages.single_bit_ecc.count        RETIRED_SBE
    retired_pages.double_bit.count            RETIRED_DBE
    remapped_rows.correctable                 CORRECTABLE_REMAPPED_ROWS
    remapped_rows.uncorrectable               UNCORRECTABLE_REMAPPED_ROWS
    clocks_event_reasons.active (hex)         CLOCK_THROTTLE_REASONS (the bitmask as a number)
      (alias clocks_throttle_reasons.active)
    total_energy_consumption                  TOTAL_ENERGY_CONSUMPTION (mJ; J converted)
    any other field with a numeric value      nvidia_smi.<field>, e.g. nvidia_smi.power.draw.average

Columns: `index` → gpu, `uuid` → uuid, `name` → model (short name) and labels `modelName`
(raw), `hostname` → host, `timestamp` → ts. Text fields go into `labels` under their own name
(`pci.bus_id` as `pci_bus_id`): identifiers (`pci.*`, `inforom.*`, `platform.*`, serial,
versions) always, any other field when its value is not a number (`pstate` P0, `Enabled`).
A value nvidia-smi could not give (`[N/A]`, `N/A`, `[Not Supported]`, `[Requested
functionality has been deprecated]`, empty) is simply absent.
"""

from __future__ import annotations

import re

#: Field (lower case) → DCGM metric. Two fields naming one metric are alternatives: the first
#: in this table with a value in a row wins; see SECOND_CHOICE for what the other becomes.
DCGM_METRICS: dict[str, str] = {
    "power.draw": "DCGM_FI_DEV_POWER_USAGE",
    "power.draw.instant": "DCGM_FI_DEV_POWER_USAGE",
    "utilization.gpu": "DCGM_FI_DEV_GPU_UTIL",
    "utilization.memory": "DCGM_FI_DEV_MEM_COPY_UTIL",
    "utilization.encoder": "DCGM_FI_DEV_ENC_UTIL",
    "utilization.decoder": "DCGM_FI_DEV_DEC_UTIL",
    "memory.used": "DCGM_FI_DEV_FB_USED",
    "memory.free": "DCGM_FI_DEV_FB_FREE",
    "memory.total": "DCGM_FI_DEV_FB_TOTAL",
    "memory.reserved": "DCGM_FI_DEV_FB_RESERVED",
    "temperature.gpu": "DCGM_FI_DEV_GPU_TEMP",
    "temperature.memory": "DCGM_FI_DEV_MEMORY_TEMP",
    "clocks.current.sm": "DCGM_FI_DEV_SM_CLOCK",
    "clocks.sm": "DCGM_FI_DEV_SM_CLOCK",
    "clocks.current.memory": "DCGM_FI_DEV_MEM_CLOCK",
    "clocks.mem": "DCGM_FI_DEV_MEM_CLOCK",
    "clocks.current.video": "DCGM_FI_DEV_VIDEO_CLOCK",
    "clocks.video": "DCGM_FI_DEV_VIDEO_CLOCK",
    "clocks.max.sm": "DCGM_FI_DEV_MAX_SM_CLOCK",
    "clocks.max.memory": "DCGM_FI_DEV_MAX_MEM_CLOCK",
    "pcie.link.gen.current": "DCGM_FI_DEV_PCIE_LINK_GEN",
    "pcie.link.width.current": "DCGM_FI_DEV_PCIE_LINK_WIDTH",
    "pcie.link.gen.max": "DCGM_FI_DEV_PCIE_MAX_LINK_GEN",
    "pcie.link.width.max": "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",
    "fan.speed": "DCGM_FI_DEV_FAN_SPEED",
    "power.limit": "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    "enforced.power.limit": "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    "power.default_limit": "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF",
    "power.min_limit": "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN",
    "power.max_limit": "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX",
    "ecc.errors.corrected.volatile.total": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "ecc.errors.uncorrected.volatile.total": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "ecc.errors.corrected.aggregate.total": "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "ecc.errors.uncorrected.aggregate.total": "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "retired_pages.single_bit_ecc.count": "DCGM_FI_DEV_RETIRED_SBE",
    "retired_pages.double_bit.count": "DCGM_FI_DEV_RETIRED_DBE",
    "remapped_rows.correctable": "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "remapped_rows.uncorrectable": "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "clocks_event_reasons.active": "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "clocks_throttle_reasons.active": "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "total_energy_consumption": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
}
#: What a field becomes when another field already gave its DCGM metric in the row. Fields
#: not here are aliases of the same reading (clocks.sm beside clocks.current.sm): skipped.
SECOND_CHOICE = {"power.draw.instant": "DCGM_FI_DEV_POWER_USAGE_INSTANT"}
#: Multipliers into the DCGM unit where nvidia-smi's unit differs (energy: DCGM counts mJ).
TO_DCGM_UNIT = {("total_energy_consumption", "j"): 1000.0, ("total_energy_consumption", "kj"): 1e6}

#: Fields that are columns, not metrics or labels.
COLUMNS = frozenset({"timestamp", "index", "uuid", "name", "hostname"})
#: Label key where it is not the field name: the names dcgm-exporter gives the same things.
LABEL_KEYS = {"name": "modelName", "pci.bus_id": "pci_bus_id"}
#: Identifiers and versions: labels even when they look like numbers (serial 0000000000000).
TEXT_FIELDS = frozenset(
    {"serial", "driver_version", "kmd_version", "vbios_version", "compute_cap",
     "fabric.cliqueid", "fabric.clusteruuid", "gpu_serial", "gpu_uuid", "gpu_name"}
)  # fmt: skip
TEXT_PREFIXES = ("pci.", "inforom.", "platform.")
#: Hex values are bitmasks in these fields (numbers); elsewhere they are identifiers (labels).
BITMASK_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")

_NUMBER = re.compile(
    r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)(?:\s*([A-Za-z%/°]+))?"
)
_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
_HEADER_CELL = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*(?:\[([^\]]*)\])?")


def is_absent(value: str) -> bool:
    """True for what nvidia-smi prints when it has no value.

    >>> [is_absent(v) for v in ("[N/A]", "N/A", "", "[Not Supported]", "0", "None")]
    [True, True, True, True, False, False]
    """
    return not value or value == "N/A" or (value.startswith("[") and value.endswith("]"))


def is_text_field(field: str) -> bool:
    """Fields (lower case) whose values are labels whatever they look like."""
    return field in TEXT_FIELDS or field.startswith(TEXT_PREFIXES)


def number(field: str, value: str, unit: str | None) -> float | None:
    """The value of a numeric reading ('627.40 W', '100 %', '0x1F' bitmask); None if not one.

    >>> number("power.draw", "627.40 W", "W"), number("utilization.gpu", "100", "%")
    (627.4, 100.0)
    >>> number("clocks_event_reasons.active", "0x0000000000000004", None)
    4.0
    >>> number("pci.device_id", "0x233010DE", None) is None  # an identifier, not a number
    True
    >>> number("power.draw", "627.40 MHz", "W") is None, number("pstate", "P0", None) is None
    (True, True)
    """
    found = _NUMBER.fullmatch(value)
    if found is None:
        if _HEX.fullmatch(value) and field.startswith(BITMASK_PREFIXES):
            return float(int(value, 16))
        return None
    given = found.group(2)
    if given is not None and unit is not None and given.casefold() != unit.casefold():
        return None
    scale = TO_DCGM_UNIT.get((field, (given or unit or "").casefold()), 1.0)
    return float(found.group(1)) * scale


def header_cells(line: str) -> list[tuple[str, str | None]] | None:
    """(field, unit) per cell if `line` reads as a header line, else None.

    >>> header_cells("timestamp, power.draw [W], utilization.gpu [%]")
    [('timestamp', None), ('power.draw', 'W'), ('utilization.gpu', '%')]
    >>> header_cells("P0, Enabled") is None, header_cells("0, 1") is None
    (True, True)
    """
    cells = []
    for cell in line.split(","):
        found = _HEADER_CELL.fullmatch(cell.strip())
        if found is None:
            return None
        cells.append((found.group(1), found.group(2)))
    known = any(
        "." in f or u is not None or f.lower() in DCGM_METRICS or f.lower() in COLUMNS
        for f, u in cells
    )
    return cells if known else None
