"""The SQL bodies of the embedded model's functions: Arrow in, Arrow out, no side effects.

`ai_embed(text)`, `ai_similarity(a, b)` and `ai_classify(text, labels [, examples])` need
nothing but wordllama (`embedded`), so their bodies are made once per process and bound on
every connection (`functions.register`). Registered without side effects, DuckDB reports them
CONSISTENT and folds a constant argument (`ai_embed('fell off the bus')`) once per query; the
incremental planner accepts them (warehouse/dynamic/plan/determinism.py).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from warehouse.ai import classify, embedded
from warehouse.ai.arrow_rows import combined, constant_list

VECTOR = f"FLOAT[{embedded.DIM}]"
EXAMPLE = "STRUCT(input VARCHAR, label VARCHAR)"


def vectors_of(texts: pa.Array) -> pa.Array:
    """FLOAT[DIM] per text; NULL for a NULL text."""
    strings = texts.to_pylist()
    valid = [t is not None for t in strings]
    matrix = np.zeros((len(strings), embedded.DIM), dtype=np.float32)
    present = [i for i, ok in enumerate(valid) if ok]
    if present:
        # one embedding per distinct text: log lines repeat
        distinct = list(dict.fromkeys(strings[i] for i in present))
        where = {text: k for k, text in enumerate(distinct)}
        found = embedded.embed([t or "" for t in distinct])
        matrix[present] = found[[where[strings[i]] for i in present]]
    mask = pa.array([not ok for ok in valid], type=pa.bool_())
    return pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.ravel()), embedded.DIM, mask=mask if not all(valid) else None
    )


def embed_body(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`wanka_ai_embed_local(text VARCHAR) -> FLOAT[256]`."""
    return vectors_of(combined(texts))


def classify_body(
    texts: pa.Array | pa.ChunkedArray,
    labels: pa.Array | pa.ChunkedArray,
    examples: pa.Array | pa.ChunkedArray,
) -> pa.Array:
    """`wanka_ai_classify_local(text, labels VARCHAR[], examples EXAMPLE[]) -> VARCHAR`."""
    text_values = combined(texts).to_pylist()
    same_labels, label_list = constant_list(labels)
    same_examples, example_list = constant_list(examples)
    if same_labels and same_examples:
        pairs = [
            (str(e["input"]), str(e["label"]))
            for e in example_list or []
            if e is not None and e["input"] is not None and e["label"] is not None
        ]
        return pa.array(classify.classify(text_values, label_list or [], pairs), pa.string())
    # labels or examples differ between rows: classify each distinct combination apart
    label_rows = combined(labels).to_pylist()
    example_rows = combined(examples).to_pylist()
    Key = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]
    groups: dict[Key, list[int]] = {}
    for row, (row_labels, row_examples) in enumerate(zip(label_rows, example_rows, strict=True)):
        key: Key = (
            tuple(str(label) for label in row_labels or () if label is not None),
            tuple(
                (str(e["input"]), str(e["label"]))
                for e in row_examples or ()
                if e is not None and e["input"] is not None and e["label"] is not None
            ),
        )
        groups.setdefault(key, []).append(row)
    out: list[str | None] = [None] * len(text_values)
    for (row_labels_key, pairs_key), rows in groups.items():
        answers = classify.classify([text_values[r] for r in rows], row_labels_key, pairs_key)
        for r, answer in zip(rows, answers, strict=True):
            out[r] = answer
    return pa.array(out, pa.string())
