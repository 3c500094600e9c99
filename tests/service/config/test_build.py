"""wanka.yml read as `wanka serve --config` reads it: the shipped example loads, flags override
the file, and every kind of bad input is an error naming the file, line and key
(`wanka check config` exits 0 or 2 on the same files)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from service.config import build
from service.config.spec import ConfigError
from service.serve.settings import ServeSettings
from tests.conftest import REPO, invoke_wanka

EXAMPLE = REPO / "deploy" / "wanka.yml"


def _load(tmp_path: Path, text: str, **flags: object) -> ServeSettings:
    file = tmp_path / "wanka.yml"
    file.write_text(text)
    return build.load(file, flags)


def test_the_shipped_example_loads_as_documented() -> None:
    settings = build.load(EXAMPLE, {})
    assert settings.db == "/var/lib/wanka/wanka.duckdb"
    assert (settings.host, settings.port, settings.pg_port) == ("127.0.0.1", 8080, 5433)
    assert settings.limits.timeout_s == 60 and settings.limits.max_upload_bytes == 1 << 30
    [job] = settings.feeds.scrape_jobs
    assert (job.name, job.interval_s, job.timeout_s) == ("dcgm", 15.0, 10.0)
    assert job.static == ((("gpu-node-001:9400", "gpu-node-002:9400"), (("rack", "r01"),)),)
    assert job.files == (str(EXAMPLE.parent / "targets/dcgm-*.json"),)
    assert settings.feeds.sacct_interval_s == 60
    assert settings.retention == (("gpu_metrics", 14 * 86_400.0),)
    assert settings.external_labels == (("cluster", "example"),)
    assert (settings.log.level, settings.log.format) == ("info", "logfmt")
    assert settings.shutdown_grace_s == 30
    assert settings.promql_cache_s == 300
    assert invoke_wanka("check", "config", str(EXAMPLE)).returncode == 0


def test_no_file_gives_the_flags_defaults() -> None:
    settings = build.load(None, {})
    assert settings == ServeSettings(None)


def test_a_flag_overrides_the_file(tmp_path: Path) -> None:
    text = (
        "listen: {http: '0.0.0.0:9000', postgres: '127.0.0.1:6000'}\n"
        "limits: {query_timeout: 5m}\n"
        "log: {level: warning}\n"
        "scrape_configs: [{job_name: a, static_configs: [{targets: ['x:1']}]}]\n"
    )
    settings = _load(tmp_path, text, http_port=9999, timeout_s=7.0, log_level="debug")
    assert (settings.host, settings.port) == ("0.0.0.0", 9999)
    assert (settings.pg_bind, settings.pg_port) == ("127.0.0.1", 6000)
    assert settings.limits.timeout_s == 7.0 and settings.log.level == "debug"
    off = _load(tmp_path, text, pg_port=0, scrape_config=tmp_path / "sd.json")
    assert off.pg_port is None
    [job] = off.feeds.scrape_jobs
    assert job.files == (str(tmp_path / "sd.json"),) and job.name == "dcgm"


def test_the_promql_cache_offset_from_the_file_or_a_flag(tmp_path: Path) -> None:
    assert _load(tmp_path, "promql: {cache_offset: 2m}\n").promql_cache_s == 120
    assert _load(tmp_path, "promql: {cache_offset: 'off'}\n").promql_cache_s is None
    assert (
        _load(tmp_path, "promql: {cache_offset: 2m}\n", promql_cache_offset=0.0).promql_cache_s
        is None
    )
    assert _load(tmp_path, "log: {level: info}\n", promql_cache_offset=60.0).promql_cache_s == 60
    with pytest.raises(ConfigError, match="cache_offset"):
        _load(tmp_path, "promql: {cache_offset: soon}\n")


def test_scrape_configs_as_prometheus_writes_them(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("s3cret\n")
    text = (
        "global: {scrape_interval: 30s, scrape_timeout: 20s}\n"
        "scrape_configs:\n"
        "  - job_name: slow\n"
        "    scrape_interval: 10s\n"  # the global timeout is longer: cut to the interval
        "    params: {module: [gpu]}\n"
        "    basic_auth: {username: u, password_file: pw}\n"
        "  - job_name: default\n"
        "    scheme: https\n"
    )
    slow, default = _load(tmp_path, text).feeds.scrape_jobs
    assert (slow.interval_s, slow.timeout_s, slow.params) == (10.0, 10.0, (("module", "gpu"),))
    assert slow.headers == (("Authorization", "Basic " + base64.b64encode(b"u:s3cret").decode()),)
    assert "s3cret" not in repr(slow)
    assert (default.interval_s, default.timeout_s, default.scheme) == (30.0, 20.0, "https")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("limits:\n  query_timout: 5s\n", "wanka.yml:2: limits.query_timout: unknown key"),
        ("limits:\n  max_rows_json: lots\n", "wanka.yml:2: limits.max_rows_json: expected a whole"),
        ("listen:\n  http: nowhere\n", "wanka.yml:2: listen.http: 'nowhere' is not a host:port"),
        ("log: {level: loud}\n", "wanka.yml:1: log.level: 'loud' is not one of debug"),
        ("scheduler:\n  refresh_interval: often\n", "wanka.yml:2: scheduler.refresh_interval:"),
        ("memory_limit: lots\n", "wanka.yml:1: memory_limit: 'lots' is not a size"),
        ("retention: {gpu_metrics: forever}\n", "wanka.yml:1: retention.gpu_metrics:"),
        ("limits: 5\n", "wanka.yml:1: limits: expected a mapping"),
        ("log: {level: info}\nlog: {level: info}\n", "wanka.yml:2: log: given twice"),
        (
            "scrape_configs:\n  - job_name: a\n  - job_name: a\n",
            "wanka.yml:3: scrape_configs[1]: job_name 'a' is given twice",
        ),
        ("scrape_configs:\n  - scrape_interval: 5s\n", "wanka.yml:2: scrape_configs[0]: job_name"),
        (
            "scrape_configs:\n  - job_name: a\n    relabel_configs: []\n",
            "wanka.yml:3: scrape_configs[0].relabel_configs: unknown key",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n    scrape_timeout: 9s\n",
            "scrape_timeout (9 s) is longer than scrape_interval (5 s)",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    basic_auth:\n      username: u\n"
            "      password: hunter2\n",
            "wanka.yml:5: scrape_configs[0].basic_auth.password: a secret is not written",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    basic_auth:\n      username: u\n"
            "      password_file: /nonexistent/pw\n",
            "wanka.yml:5: scrape_configs[0].basic_auth.password_file: cannot read the secret",
        ),
        (
            "scrape_configs:\n  - job_name: a\n    authorization:\n"
            "      credentials_env: WANKA_TEST_UNSET_TOKEN\n",
            "the environment variable WANKA_TEST_UNSET_TOKEN is not set",
        ),
        (
            "tls:\n  cert_file: /nonexistent/c.pem\n  key_file: /nonexistent/k.pem\n",
            "wanka.yml:2: tls.cert_file: cannot read /nonexistent/c.pem",
        ),
        ("tls:\n  cert_file: wanka.yml\n", "wanka.yml:1: tls: key_file is missing"),
        ("listen: [\n", "wanka.yml:2: not valid YAML"),
    ],
)
def test_bad_input_names_the_file_line_and_key(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, text)
    message = str(raised.value)
    assert said in message.replace(str(tmp_path) + "/", "")
    assert "hunter2" not in message
    checked = invoke_wanka("check", "config", str(tmp_path / "wanka.yml"))
    assert checked.returncode == 2
    assert said in checked.stderr.replace(str(tmp_path) + "/", "")


def test_check_config_takes_several_files_and_fails_on_any(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yml", tmp_path / "bad.yml"
    good.write_text("log: {format: json}\n")
    bad.write_text("log: {format: xml}\n")
    both = invoke_wanka("check", "config", str(good), str(bad))
    assert both.returncode == 2
    assert "SUCCESS" in both.stdout and "FAILED" in both.stderr
    assert invoke_wanka("check", "config", str(tmp_path / "missing.yml")).returncode == 2
