"""file_sd targets as Prometheus reads them: URL from __scheme__/__metrics_path__/__param_*,
`job` and `instance` defaults, `__` labels dropped, a bad file refused naming the entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warehouse.errors import UserError
from warehouse.scrape.targets import Target, load

GROUPS = [
    {"targets": ["node001:9400", "node002:9400"], "labels": {"cluster": "a"}},
    {
        "targets": ["[fe80::1]:9400"],
        "labels": {
            "__scheme__": "https",
            "__metrics_path__": "/dcgm",
            "__param_collect": "gpu",
            "job": "gpus",
            "instance": "n3",
            "empty": "",
        },
    },
]


def test_json_and_yaml_give_the_same_targets(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text(json.dumps(GROUPS))
    yaml_text = "\n".join(
        [
            "- targets: [node001:9400, node002:9400]",
            "  labels: {cluster: a}",
            "- targets: ['[fe80::1]:9400']",
            "  labels:",
            "    __scheme__: https",
            "    __metrics_path__: /dcgm",
            "    __param_collect: gpu",
            "    job: gpus",
            "    instance: n3",
            "    empty: ''",
        ]
    )
    (tmp_path / "t.yml").write_text(yaml_text)
    want = [
        Target(
            "http://node001:9400/metrics",
            (("cluster", "a"), ("instance", "node001:9400"), ("job", "dcgm")),
        ),
        Target(
            "http://node002:9400/metrics",
            (("cluster", "a"), ("instance", "node002:9400"), ("job", "dcgm")),
        ),
        Target("https://[fe80::1]:9400/dcgm?collect=gpu", (("instance", "n3"), ("job", "gpus"))),
    ]
    assert load(tmp_path / "t.json") == want
    assert load(tmp_path / "t.yml") == want


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ('{"targets": ["a:1"]}', "a list of"),
        ('[{"targets": "a:1"}]', "entry 1: 'targets' must be a list"),
        ('[{"targets": ["a:1"]}, {"targets": ["b:1"], "labels": {"bad-name": "x"}}]', "entry 2"),
        ('[{"targets": ["a:1"], "labels": {"n": 3}}]', "label 'n' must be a string"),
        ('[{"targets": ["http://a:1/metrics"]}]', "not a host:port"),
        ('[{"targets": ["a:1"], "lables": {}}]', "unknown field 'lables'"),
        ("[{", "not valid JSON"),
    ],
)
def test_a_bad_file_is_refused_naming_the_entry(tmp_path: Path, content: str, said: str) -> None:
    path = tmp_path / "targets.json"
    path.write_text(content)
    with pytest.raises(UserError, match=r"targets\.json") as error:
        load(path)
    assert said in str(error.value)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read the scrape config"):
        load(tmp_path / "none.yml")
