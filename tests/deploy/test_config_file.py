"""The configurations the deploy files read are ones `wanka check config` accepts: deploy/wanka.yml
(the unit's /etc/wanka/wanka.yml, and the documented example) and deploy/docker/wanka.yml (the
image's and compose's), which serves both endpoints on every address of the container."""

from __future__ import annotations

import pytest

from service.config import build
from tests.conftest import invoke_wanka
from tests.deploy.tools import CONFIG, CONTAINER_CONFIG


@pytest.mark.parametrize("config", [CONFIG, CONTAINER_CONFIG], ids=["unit", "container"])
def test_wanka_check_config_accepts_the_shipped_file(config: object) -> None:
    checked = invoke_wanka("check", "config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_container_serves_both_endpoints_on_every_address() -> None:
    settings = build.load(CONTAINER_CONFIG, {})
    assert (settings.host, settings.port) == ("0.0.0.0", 8080)
    assert (settings.pg_bind, settings.pg_port) == ("0.0.0.0", 5433)
    assert settings.db == "/var/lib/wanka/wanka.duckdb"
