"""GPU model names as devices report them, turned into the short names `gpu_models` uses.

DCGM's `modelName` label and nvidia-smi's `name` field carry the full device name
("NVIDIA H100 80GB HBM3"); the warehouse joins on the short one ("H100"). The full names the
reference table knows map exactly; any other name maps to the longest short name that appears
in it as a whole token ("NVIDIA A100-SXM4-40GB" → "A100", never "A10"); a name with none stays
as it is, so nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping


class ModelNames:
    """Normalises device names; built once per ingest from `ReadContext.model_names`.

    >>> names = ModelNames({"NVIDIA H100 80GB HBM3": "H100", "NVIDIA A10": "A10",
    ...                     "NVIDIA A100-SXM4-80GB": "A100", "Ascend 910B": "Ascend 910B"})
    >>> names.short("NVIDIA H100 80GB HBM3")
    'H100'
    >>> names.short("NVIDIA A100-SXM4-40GB"), names.short("NVIDIA H100 NVL")
    ('A100', 'H100')
    >>> names.short("Huawei Ascend 910B2"), names.short("NVIDIA A10G")
    ('Huawei Ascend 910B2', 'NVIDIA A10G')
    >>> names.short("ascend 910b")
    'Ascend 910B'
    """

    def __init__(self, full_to_short: Mapping[str, str]) -> None:
        self._exact = {full.strip().casefold(): short for full, short in full_to_short.items()}
        shorts = sorted(set(full_to_short.values()), key=lambda s: (-len(s), s))
        # One alternation, longest first, each alternative a whole token: "A100" must not
        # match inside "GA100X" and must win over "A10".
        alternatives = "|".join(re.escape(s) for s in shorts)
        self._token = (
            re.compile(rf"(?<![A-Za-z0-9])({alternatives})(?![A-Za-z0-9])", re.IGNORECASE)
            if shorts
            else None
        )
        self._canonical = {s.casefold(): s for s in shorts}
        self._cache: dict[str, str] = {}

    def short(self, name: str) -> str:
        """The short model name for a device name; the name itself when none is known."""
        found = self._cache.get(name)
        if found is None:
            found = self._lookup(name)
            self._cache[name] = found
        return found

    def _lookup(self, name: str) -> str:
        key = name.strip().casefold()
        if key in self._exact:
            return self._exact[key]
        if self._token is not None:
            best: str | None = None
            for match in self._token.finditer(name):
                candidate = self._canonical[match.group(1).casefold()]
                if best is None or len(candidate) > len(best):
                    best = candidate
            if best is not None:
                return best
        return name
