"""The outside programs the deploy tests check files with, and the files they check."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

DEPLOY = REPO / "deploy"
UNIT = DEPLOY / "systemd" / "wanka.service"
SYSUSERS = DEPLOY / "systemd" / "wanka.sysusers.conf"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
COMPOSE = DEPLOY / "compose" / "docker-compose.yml"
CONFIG = DEPLOY / "wanka.yml"
CONTAINER_CONFIG = DEPLOY / "docker" / "wanka.yml"


def tool(name: str, installed_by: str) -> str:
    """The path of program `name`: .venv/bin first (hadolint comes from PyPI), then PATH.

    Missing, it fails the test under CI=true, whose .ci/run installs it (`installed_by` says
    how), and skips it elsewhere."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        message = f"{name} is not installed ({installed_by})"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def unit_settings(text: str) -> dict[str, list[str]]:
    """A systemd unit's `Key=value` lines, every value of a key in order (Environment= and
    others may repeat); comments and section headers left out.

    >>> unit_settings("[Service]\\n# why\\nEnvironment=A=1\\nEnvironment=B=2\\nUser=wanka\\n")
    {'Environment': ['A=1', 'B=2'], 'User': ['wanka']}
    """
    settings: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        settings.setdefault(key.strip(), []).append(value.strip())
    return settings
