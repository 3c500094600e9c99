"""Classification by the embedded model: nearest labelled example, else nearest label.

With examples (`ai_classify(text, labels, examples)`), a text takes the label of the labelled
example most similar to it (cosine of wordllama embeddings; 1-nearest neighbour), among the
examples whose label is one of `labels`. Without, it takes the label whose own text is most
similar. The first is far better on the cluster's text: 95 of 109 XID descriptions against
14-27 for label names or descriptions (../shared/design/FIELD_NOTES.md, "AI functions"); the
shipped analysis measures it on public text (sql/analyses/interruption_text_causes.sql).

The answer is always one of `labels` or NULL: NULL for a NULL or empty text, no labels, or no
example with one of the labels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from warehouse.ai import embedded

#: Hex words, PCI addresses and numbers: a log line's registers and ids say nothing of its cause,
#: and a mean of token vectors drowns in them (gpud's NVLink lines are mostly hex).
_NOISE = re.compile(
    r"0x[0-9a-f]+|\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-9a-f])?\b|\b[0-9a-f]*\d[0-9a-f]*\b",
    re.IGNORECASE,
)


def words(text: str) -> str:
    """The words of a text that speak of its cause: no hex, addresses or numbers, no underscores.

    >>> words("RLW_REMAP Nonfatal XC0 i0 Link 00 (0x00000004 0x00000040)")
    'RLW REMAP Nonfatal XC0 i0 Link ( )'
    """
    return " ".join(_NOISE.sub(" ", text.replace("_", " ")).split())


#: Vectors of example sets already embedded, by their (input, label) pairs; a query passes the
#: same set on every batch, so it is embedded once per process (bounded: `_KEEP` sets).
_examples: dict[tuple[tuple[str, str], ...], npt.NDArray[np.float32]] = {}
_KEEP = 16


def _vectors(pairs: tuple[tuple[str, str], ...]) -> npt.NDArray[np.float32]:
    found = _examples.get(pairs)
    if found is None:
        if len(_examples) >= _KEEP:
            _examples.pop(next(iter(_examples)))
        found = _examples[pairs] = embedded.embed([words(text) for text, _ in pairs])
    return found


def classify(
    texts: Sequence[str | None],
    labels: Sequence[str],
    examples: Sequence[tuple[str, str]] = (),
) -> list[str | None]:
    """The label of each text: its nearest example's, or (no examples) its nearest label.

    >>> classify(["the GPU fell off the bus", None], ["GPU", "network"])
    ['GPU', None]
    """
    allowed = list(dict.fromkeys(label for label in labels if label))
    if examples:
        keep = set(allowed)
        pairs = tuple((t, label) for t, label in examples if label in keep and t)
    else:
        pairs = tuple((label, label) for label in allowed)
    out: list[str | None] = [None] * len(texts)
    wanted = [i for i, t in enumerate(texts) if t is not None and t.strip()]
    if not pairs or not wanted:
        return out
    references = _vectors(pairs)
    vectors = embedded.embed([words(texts[i] or "") for i in wanted])
    nearest = np.argmax(vectors @ references.T, axis=1)
    for row, best in zip(wanted, nearest.tolist(), strict=True):
        out[row] = pairs[best][1]
    return out
