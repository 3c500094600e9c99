"""deploy/compose/: Debian's docker-compose 1.29 reads the file without a warning; it runs wanka,
Prometheus, Alertmanager and Grafana on volumes; Prometheus (promtool) forwards to wanka and
Alertmanager (amtool) is valid; Grafana is provisioned with wanka as PromQL and as PostgreSQL
and with both dashboard folders, NVIDIA's read where it lies."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.deploy.tools import COMPOSE, CONTAINER_CONFIG, tool

NVIDIA_DASHBOARD = "dcgm-exporter-dashboard.json"
DASHBOARDS_VARIABLE = "WANKA_DCGM_DASHBOARDS"


def compose_config(env: dict[str, str]) -> dict[str, Any]:
    """`docker-compose config` on the file: the model it resolved (relative paths made
    absolute, variables filled in); it fails on errors and says warnings on stderr."""
    docker_compose = tool("docker-compose", "Debian's docker-compose; .ci/run installs it")
    base = {k: v for k, v in os.environ.items() if k != DASHBOARDS_VARIABLE}
    resolved = subprocess.run(
        [docker_compose, "-f", str(COMPOSE), "config"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **env},
    )
    assert resolved.returncode == 0 and not resolved.stderr.strip(), resolved.stderr
    model: dict[str, Any] = yaml.safe_load(resolved.stdout)
    return model


def mounts(service: dict[str, Any]) -> dict[str, str]:
    """A service's volumes as {path in the container: source (a host path or a volume name)}."""
    found = {}
    for volume in service["volumes"]:
        source, target = volume.split(":")[:2]
        found[target] = source
    return found


@pytest.fixture(scope="module")
def nvidia_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where an operator put NVIDIA's dashboard: $WANKA_DCGM_DASHBOARDS."""
    return tmp_path_factory.mktemp("nvidia-dashboards")


@pytest.fixture(scope="module")
def model(nvidia_folder: Path) -> dict[str, Any]:
    return compose_config({DASHBOARDS_VARIABLE: str(nvidia_folder)})


def test_four_services_on_named_volumes(model: dict[str, Any]) -> None:
    services = model["services"]
    assert set(services) == {"wanka", "prometheus", "alertmanager", "grafana"}
    assert set(model["volumes"]) == {
        "wanka-data",
        "prometheus-data",
        "alertmanager-data",
        "grafana-data",
    }
    wanka = services["wanka"]
    assert wanka["build"] == {"context": str(REPO), "dockerfile": "deploy/docker/Dockerfile"}
    config = {"/etc/wanka/wanka.yml": str(CONTAINER_CONFIG)}
    assert mounts(wanka) == {"/var/lib/wanka": "wanka-data", **config}
    assert {port["target"] for port in wanka["ports"]} == {8080, 5433}


def test_prometheus_remote_writes_to_wanka_and_promtool_agrees(model: dict[str, Any]) -> None:
    prometheus = model["services"]["prometheus"]
    config_file = Path(mounts(prometheus)["/etc/prometheus/prometheus.yml"])
    config = yaml.safe_load(config_file.read_text())
    [remote] = config["remote_write"]
    assert remote["url"] == "http://wanka:8080/api/v1/write"
    secret = remote["basic_auth"]["password_file"]
    assert secret == "/run/secrets/wanka_prometheus_password"
    assert {"source": "wanka_prometheus_password"} in prometheus["secrets"]
    # file_sd paths are relative to the configuration: the targets folder is mounted beside it
    assert Path(mounts(prometheus)["/etc/prometheus/targets"]) == config_file.parent / "targets"
    promtool = tool("promtool", "Debian's prometheus; .ci/run installs it")
    checked = subprocess.run(
        [promtool, "check", "config", str(config_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "WARNING" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr


def test_alertmanager_configuration_passes_amtool(model: dict[str, Any]) -> None:
    amtool = shutil.which("amtool")
    if amtool is None:  # not in .ci/run: the lint is a bonus where Debian's package is there
        pytest.skip("amtool is not installed (Debian's prometheus-alertmanager)")
    config_file = mounts(model["services"]["alertmanager"])["/etc/alertmanager/alertmanager.yml"]
    checked = subprocess.run(
        [amtool, "check-config", config_file], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0 and "SUCCESS" in checked.stdout, checked.stdout + checked.stderr


def provisioning(model: dict[str, Any], kind: str) -> dict[str, Any]:
    folder = Path(mounts(model["services"]["grafana"])["/etc/grafana/provisioning"])
    [path] = (folder / kind).glob("*.yml")
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def test_grafana_reads_wanka_as_promql_and_as_postgresql(model: dict[str, Any]) -> None:
    provisioned = provisioning(model, "datasources")["datasources"]
    sources = {source["type"]: source for source in provisioned}
    assert set(sources) == {"prometheus", "grafana-postgresql-datasource"}
    promql, postgres = sources["prometheus"], sources["grafana-postgresql-datasource"]
    assert promql["url"] == "http://wanka:8080" and promql["isDefault"] is True
    assert postgres["url"] == "wanka:5433" and postgres["uid"] == "wanka"
    assert postgres["jsonData"]["database"] == "wanka"
    assert postgres["jsonData"]["sslmode"] == "disable"
    secret = "$__file{/run/secrets/wanka_grafana_password}"
    assert promql["secureJsonData"]["basicAuthPassword"] == secret
    assert postgres["secureJsonData"]["password"] == secret
    assert {"source": "wanka_grafana_password"} in model["services"]["grafana"]["secrets"]


def test_every_dashboard_provider_reads_a_mounted_folder(
    model: dict[str, Any], nvidia_folder: Path
) -> None:
    grafana = mounts(model["services"]["grafana"])
    providers = {
        provider["name"]: provider["options"]["path"]
        for provider in provisioning(model, "dashboards")["providers"]
    }
    assert set(providers) == {"wanka", "nvidia"}
    assert Path(grafana[providers["wanka"]]) == REPO / "dashboards" / "grafana"
    assert Path(grafana[providers["nvidia"]]) == nvidia_folder


def test_nvidia_dashboard_is_read_from_the_shared_data_by_default() -> None:
    """Unset, the variable falls back to the shared data folder beside the checkout, which
    holds NVIDIA's dashboard (its MANIFEST.md: read in place, never copied into the repo)."""
    default = compose_config({})
    folder = Path(mounts(default["services"]["grafana"])["/var/lib/grafana/dashboards/nvidia"])
    assert folder == REPO.parent / "shared" / "data" / "grafana"
    if not (folder.parent / "MANIFEST.md").is_file():
        message = f"the shared data folder {folder.parent} is missing"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    assert (folder / NVIDIA_DASHBOARD).is_file()
