"""deploy/systemd/wanka.service: systemd reads it without a word of complaint, it runs what the
issue asks, as its own user, hardened; its sysusers.d file makes that user."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.deploy.tools import SYSUSERS, UNIT, tool, unit_settings

INSTALL = "Debian's systemd package; .ci/run installs it when missing"
EXEC_START = "/usr/bin/wanka --db /var/lib/wanka/wanka.duckdb serve --config /etc/wanka/wanka.yml"


def verify(unit: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("systemd-analyze", INSTALL), "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_systemd_analyze_verify_has_nothing_to_say_of_the_unit(tmp_path: Path) -> None:
    # `verify` refuses a unit whose ExecStart= program is missing (/usr/bin/wanka is not
    # installed here), and it checks only that the path is an executable file. So the unit is
    # verified as a copy that names a stand-in executable in tmp; everything else is unchanged.
    # (--root=DIR would need /bin/kill and sysinit.target inside DIR too.)
    stand_in = tmp_path / "bin" / "wanka"
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\n")
    stand_in.chmod(0o755)
    text = UNIT.read_text()
    assert text.count("ExecStart=/usr/bin/wanka ") == 1
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace("ExecStart=/usr/bin/wanka ", f"ExecStart={stand_in} "))
    checked = verify(copy)
    # It exits 0 on warnings (an unknown key, a bad value), so its stderr is what tells.
    about_the_unit = [line for line in checked.stderr.splitlines() if UNIT.name in line]
    assert checked.returncode == 0 and not about_the_unit, checked.stderr


def test_verify_does_complain_of_a_broken_unit(tmp_path: Path) -> None:
    """The check above can fail: the same unit with a misspelt key and a bad value."""
    broken = tmp_path / UNIT.name
    broken.write_text(
        UNIT.read_text()
        .replace("ExecStart=/usr/bin/wanka", "ExecStart=/bin/true")
        .replace("ProtectSystem=strict", "ProtectSystem=very\nProtectSytem=strict")
    )
    stderr = verify(broken).stderr
    assert "Unknown key 'ProtectSytem'" in stderr and "very" in stderr, stderr


def test_the_unit_serves_the_state_directory_as_its_own_user() -> None:
    unit = unit_settings(UNIT.read_text())
    assert unit["ExecStart"] == [EXEC_START]
    assert unit["User"] == ["wanka"] and unit["StateDirectory"] == ["wanka"]
    assert unit["ReadWritePaths"] == ["/var/lib/wanka"]
    assert unit["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert unit["Restart"] == ["on-failure"] and unit["KillSignal"] == ["SIGTERM"]
    assert unit["TimeoutStopSec"] and unit["WantedBy"] == ["multi-user.target"]


def test_the_unit_is_hardened() -> None:
    unit = unit_settings(UNIT.read_text())
    for key in (
        "NoNewPrivileges",
        "ProtectHome",
        "PrivateTmp",
        "PrivateDevices",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectKernelLogs",
        "ProtectControlGroups",
        "RestrictNamespaces",
        "LockPersonality",
        "MemoryDenyWriteExecute",
    ):
        assert unit.get(key) == ["yes"], key
    assert unit["ProtectSystem"] == ["strict"]
    assert unit["RestrictAddressFamilies"] == ["AF_UNIX AF_INET AF_INET6"]
    assert unit["SystemCallArchitectures"] == ["native"]
    assert unit["CapabilityBoundingSet"] == [""]  # empty: no capability at all


def test_sysusers_makes_the_user_with_the_state_directory_as_home(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    made = subprocess.run(
        [tool("systemd-sysusers", INSTALL), f"--root={tmp_path}", str(SYSUSERS)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    [user] = [
        line.split(":")
        for line in (tmp_path / "etc" / "passwd").read_text().splitlines()
        if line.startswith("wanka:")
    ]
    assert user[5:] == ["/var/lib/wanka", "/usr/sbin/nologin"]
    assert any(line.startswith("wanka:") for line in (tmp_path / "etc" / "group").open())
