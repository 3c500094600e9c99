"""/metrics names each family once, with its help text, in service/serve/metric_families.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.serve import metric_families
from service.serve.metric_families import QUERIES, Counter
from service.serve.metrics import Metrics

REPO = Path(__file__).resolve().parents[3]


def test_a_family_is_declared_once() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        metric_families._declare(Counter(QUERIES.name, "Again."))


def test_help_text_comes_from_the_declaration() -> None:
    metrics = Metrics()
    metrics.count(QUERIES, outcome="ok")
    assert metrics.render().splitlines()[:3] == [
        "# HELP wanka_queries_total Queries answered.",
        "# TYPE wanka_queries_total counter",
        'wanka_queries_total{outcome="ok"} 1',
    ]


def test_no_module_spells_a_metric_name_but_its_declaration() -> None:
    sources = {
        path: path.read_text(encoding="utf-8")
        for package in ("service", "warehouse")
        for path in (REPO / package).rglob("*.py")
        if path.name != "metric_families.py"
    }
    for name in metric_families.DECLARED:
        spelt = [str(path) for path, text in sources.items() if f'"{name}"' in text]
        assert spelt == [], f"{name} is spelt outside metric_families.py"
