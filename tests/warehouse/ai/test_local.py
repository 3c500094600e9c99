"""The embedded model's functions: ai_embed, ai_similarity, ai_classify with the real wordllama."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.warehouses import Warehouses
from warehouse.ai import classify, embedded
from warehouse.kernel.engine import Engine
from warehouse.query.executor import execute

LABELS = ["Faulty GPU", "GPU HBM3 Memory", "Network Switch/Cable"]


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Engine]:
    path = warehouses.empty(tmp_path_factory.mktemp("ai") / "w.duckdb")
    with Engine(str(path)) as engine:
        yield engine


def one(eng: Engine, sql: str, params: list[Any] | None = None) -> Any:
    cur = eng.cursor()
    try:
        return cur.execute(sql, params or []).fetchall()[0][0]
    finally:
        cur.close()


def test_embed_is_unit_length_256_and_agrees_with_the_model(eng: Engine) -> None:
    text = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
    got = np.array(one(eng, "SELECT ai_embed(?)", [text]), dtype=np.float32)
    assert got.shape == (256,)
    assert np.isclose(np.linalg.norm(got), 1.0, atol=1e-5)
    assert np.allclose(got, embedded.embed([text])[0], atol=1e-6)


def test_null_text_gives_null(eng: Engine) -> None:
    assert one(eng, "SELECT ai_embed(NULL::VARCHAR)") is None
    assert one(eng, "SELECT ai_similarity(NULL::VARCHAR, 'x')") is None
    assert one(eng, "SELECT ai_classify(NULL::VARCHAR, ['a', 'b'])") is None


def test_more_rows_than_a_vector_keep_their_order(eng: Engine) -> None:
    rows = one(
        eng,
        "SELECT count(*) FILTER (WHERE ai_similarity(t, 'link ' || i) > 0.9999) FROM ("
        "SELECT i, 'link ' || i AS t FROM range(5000) r(i))",
    )
    assert rows == 5000


def test_similarity_ranks_the_related_text_first(eng: Engine) -> None:
    near = one(eng, "SELECT ai_similarity('GPU has fallen off the bus', 'gpu fell off bus')")
    far = one(eng, "SELECT ai_similarity('GPU has fallen off the bus', 'switch port flapping')")
    assert near > 0.5 > far


def test_similarity_takes_an_embedding_as_well_as_a_text(eng: Engine) -> None:
    both = one(
        eng,
        "SELECT ai_similarity(ai_embed('ECC error in HBM'), 'uncorrectable memory error') "
        "- ai_similarity('ECC error in HBM', 'uncorrectable memory error')",
    )
    assert abs(both) < 1e-6


def test_classify_by_examples_takes_the_nearest_examples_label(eng: Engine) -> None:
    got = one(
        eng,
        "SELECT ai_classify('port 7 of leaf switch flapped, link down', ?, "
        "[{'input': 'GPU has fallen off the bus', 'label': 'Faulty GPU'}, "
        "{'input': 'InfiniBand link down on switch port', 'label': 'Network Switch/Cable'}])",
        [LABELS],
    )
    assert got == "Network Switch/Cable"


def test_classify_rows_with_different_labels(eng: Engine) -> None:
    cur = eng.cursor()
    got = cur.execute(
        "SELECT ai_classify(t, l) FROM (VALUES ('fell off the bus', ['GPU', 'cable']), "
        "('fell off the bus', ['cable', 'power'])) v(t, l)"
    ).fetchall()
    cur.close()
    assert got[0][0] == "GPU" and got[1][0] in {"cable", "power"}


def test_a_megabyte_text_is_cut_to_the_models_context(eng: Engine) -> None:
    big = "GPU has fallen off the bus. " * 40_000  # 1.1 MB
    got = np.array(one(eng, "SELECT ai_embed(?)", [big]), dtype=np.float32)
    assert np.allclose(got, embedded.embed([big[: embedded.MAX_CHARS]])[0], atol=1e-6)
    assert embedded.truncate(big) == (big[: embedded.MAX_CHARS], True)


@given(
    texts=st.lists(st.one_of(st.none(), st.text(max_size=40)), max_size=8),
    labels=st.lists(st.text(max_size=12), max_size=5),
    examples=st.lists(st.tuples(st.text(max_size=20), st.text(max_size=12)), max_size=5),
)
def test_classify_answers_one_of_the_labels_or_null(
    texts: list[str | None], labels: list[str], examples: list[tuple[str, str]]
) -> None:
    for answer in classify.classify(texts, labels, examples):
        assert answer is None or answer in labels


def test_a_dynamic_table_embeds_only_the_new_rows(eng: Engine) -> None:
    cur = eng.cursor()
    try:
        insert = (
            "INSERT INTO job_events (job_id, ts, event, detail) SELECT 'j' || i, "
            "TIMESTAMPTZ '2026-11-01' + i * INTERVAL 1 MINUTE, 'failure', "
            "'job ' || i || ' failed: NCCL timeout on rank ' || (i * 7) FROM range(?, ?) r(i)"
        )
        cur.execute(insert, [0, 300])
        made = (
            execute(
                cur,
                "CREATE DYNAMIC TABLE event_causes WITH (freshness = '5 minutes', "
                "refresh_mode = 'incremental') AS SELECT job_id, detail, "
                f"ai_classify(detail, {LABELS!r}) AS cause, ai_embed(detail) AS v FROM job_events",
            )
            .read_all()
            .to_pylist()
        )
        assert made[0]["refresh_mode"] == "append"
        cur.execute(insert, [300, 340])
        before = embedded.calls
        execute(cur, "REFRESH DYNAMIC TABLE event_causes").read_all()
        # 40 new rows, each embedded once for ai_classify and once for ai_embed
        assert embedded.calls - before == 80
        assert cur.execute("SELECT count(*), count(cause) FROM event_causes").fetchall() == [
            (340, 340)
        ]
    finally:
        cur.close()
