"""A gpu_series row's labels read one by one (`source.gpu_label`, what matchers and label
values use) are the labels its map rebuilds (`source.GPU_LABELS`), for every label name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.warehouse.promql import reference as ref
from tests.warehouses import Warehouses
from warehouse.kernel.engine import Engine
from warehouse.promql import source
from warehouse.promql.plan import text


@pytest.fixture(scope="module")
def eng(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Engine:
    engine = Engine(str(warehouses.empty(Path(tmp_path_factory.mktemp("source")) / "w.duckdb")))
    series = dict(ref.cluster())
    # no Hostname: the host comes from `instance`; an empty label; no gpu or UUID
    odd: dict[ref.Labels, ref.Samples] = {
        (("__name__", "DCGM_FI_DEV_GPU_TEMP"), ("empty", ""), ("instance", "10.9.9.9:9400"),
         ("job", "dcgm")): [(ref.T0 + 5_000, 40.0)],
    }  # fmt: skip
    ref.load_wanka(engine, {**series, **odd})
    return engine


def test_every_label_read_alone_is_the_label_the_map_has(eng: Engine) -> None:
    names = [r[0] for r in eng.con.execute(
        f"SELECT DISTINCT unnest(map_keys({source.GPU_LABELS})) FROM wanka.gpu_series r"
    ).fetchall()] + ["__host__", "empty", "no_such_label"]  # fmt: skip
    assert {"Hostname", "gpu", "UUID", "__name__", "instance", "modelName"} <= set(names)
    for name in names:
        label = text(name)
        wrong = eng.con.execute(
            f"SELECT count(*), count(*) FILTER ({source.gpu_label(name)} <> "
            f"coalesce(({source.GPU_LABELS})[{label}], '')) FROM wanka.gpu_series r"
        ).fetchone()
        assert wrong is not None and wrong[0] > 16 and wrong[1] == 0, name
    hosts = eng.con.execute(
        f"SELECT {source.gpu_label('Hostname')}, {source.gpu_label('instance')} "
        "FROM wanka.gpu_series r WHERE r.labels LIKE '%__host__%'"
    ).fetchall()
    assert hosts == [("", "10.9.9.9:9400")]
