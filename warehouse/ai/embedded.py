"""The embedded default model: wordllama's static embeddings, loaded once per process, offline.

wordllama (MIT, github.com/dleemiller/WordLlama) ships its weights inside its wheel: a token
embedding table distilled from large language models' input embeddings (config `l2_supercat`,
256 dimensions). A text's embedding is the mean of its tokens' vectors (average pooling over
the attention mask), here L2-normalised so that a dot product is the cosine similarity.

`WordLlama.load()` tries to download; loading from the package's own folder with downloads
disabled works offline (../shared/design/FIELD_NOTES.md, "AI functions"). The tokenizer does
no truncation of its own, and a batch is padded to its longest text, so a text of megabytes
would take gigabytes: texts are cut to `MAX_CHARS` characters first (`truncate`), which the
`_detail` forms report.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

#: The name SQL calls the embedded model by (`ai_embed(text, 'wordllama')`).
NAME = "wordllama"
CONFIG = "l2_supercat"
DIM = 256
#: Characters of a text the model reads; the rest is dropped (and said by the _detail forms).
#: ~2,000 tokens: past that a mean of token vectors says no more about a text.
MAX_CHARS = 8192
#: Texts per call of the model: each call pads its texts to the longest, so not too many.
BATCH = 256

log = logging.getLogger(__name__)
_lock = threading.Lock()
_model: Any = None
#: Texts embedded by the model in this process (the tests count calls with it).
calls = 0


def version() -> str:
    """The model's version, part of every cache key: package version and configuration.

    >>> version().startswith("wordllama-")
    True
    """
    return f"wordllama-{metadata.version('wordllama')}-{CONFIG}-{DIM}"


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            import wordllama  # 0.3 s and 16 MB: only when first used

            folder = Path(wordllama.__file__).parent
            _model = wordllama.WordLlama.load(
                config=CONFIG, cache_dir=folder, dim=DIM, disable_download=True
            )
        return _model


def truncate(text: str) -> tuple[str, bool]:
    """The part of `text` the model reads, and whether any was dropped.

    >>> truncate("short")
    ('short', False)
    >>> len(truncate("x" * 10_000)[0]), truncate("x" * 10_000)[1]
    (8192, True)
    """
    return (text[:MAX_CHARS], True) if len(text) > MAX_CHARS else (text, False)


def embed(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """Unit-length embeddings, one row of `DIM` float32 per text (zeros for an empty text)."""
    global calls
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    if not texts:
        return out
    model = _load()
    cut = [truncate(t)[0] for t in texts]
    long = sum(1 for t in texts if len(t) > MAX_CHARS)
    if long:
        log.warning("%s: %d text(s) cut to their first %d characters", NAME, long, MAX_CHARS)
    # sorted by length, so each call pads its texts to a similar length
    order = sorted(range(len(cut)), key=lambda i: len(cut[i]))
    for start in range(0, len(order), BATCH):
        chosen = order[start : start + BATCH]
        vectors = model.embed([cut[i] for i in chosen], norm=False, batch_size=BATCH)
        out[chosen] = vectors
    calls += len(texts)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out
