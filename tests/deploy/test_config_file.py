"""deploy/wanka.yml, the configuration the unit, the image and the compose file read, is one
`wanka check config` accepts. (The command comes with `wanka serve --config`, SQL_API.md's
"Operating wanka serve"; until this checkout has it the test says so and skips.)"""

from __future__ import annotations

import click
import pytest
import yaml

from service.cli import app
from tests.conftest import invoke_wanka
from tests.deploy.tools import CONFIG


def test_the_file_is_a_yaml_mapping_of_serve_settings() -> None:
    settings = yaml.safe_load(CONFIG.read_text())
    assert isinstance(settings, dict) and settings["http_port"] == 8080
    assert settings["pg_port"] == 5433


def test_wanka_check_config_accepts_the_shipped_file() -> None:
    if "check" not in app.list_commands(click.Context(app)):
        pytest.skip("`wanka check config` is not in this checkout yet")
    checked = invoke_wanka("check", "config", str(CONFIG))
    assert checked.returncode == 0, checked.stdout + checked.stderr
