"""`wanka serve --tls-cert --tls-key`: HTTPS and PostgreSQL SSL from one certificate."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.conftest import REPO, invoke_wanka, run_wanka
from tests.service.http.test_serve_process import free_port

pytestmark = pytest.mark.slow


def certificate(folder: Path) -> tuple[Path, Path]:
    """A throwaway self-signed certificate for localhost (openssl, as operators make them)."""
    key, cert = folder / "key.pem", folder / "cert.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    return cert, key


def test_https_and_postgres_ssl_from_one_certificate(tmp_path: Path) -> None:
    cert, key = certificate(tmp_path)
    db = str(tmp_path / "w.duckdb")
    added = invoke_wanka(
        "--db", db, "user", "add", "ann", "--role", "reader", "--password-stdin", input="pw\n"
    )
    assert added.returncode == 0, added.stderr
    http_port, pg_port = free_port(), free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", "from service.cli import main; main()", "--db", db, "serve",
         "--http-port", str(http_port), "--pg-port", str(pg_port), "--refresh-interval-s", "0",
         "--tls-cert", str(cert), "--tls-key", str(key)],
        cwd=REPO,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    url = f"https://127.0.0.1:{http_port}"
    trusted = ssl.create_default_context(cafile=str(cert))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", verify=trusted, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                output, _ = process.communicate()
                pytest.fail(f"wanka serve did not come up: {output}")
            time.sleep(0.05)  # polling for start-up, not timing anything
        answer = httpx.post(
            f"{url}/v1/query", json={"sql": "SELECT 42 AS x"}, auth=("ann", "pw"), verify=trusted
        )
        assert answer.status_code == 200 and answer.json()["rows"] == [[42]]
        with pytest.raises(httpx.TransportError):  # plain HTTP is not spoken on the TLS port
            httpx.get(f"http://127.0.0.1:{http_port}/healthz", timeout=2)
        dsn = f"host=127.0.0.1 port={pg_port} dbname=wanka user=ann password=pw"
        with psycopg.connect(f"{dsn} sslmode=require") as conn:
            assert conn.pgconn.ssl_in_use
            assert conn.execute("select 41 + 1").fetchone() == (42,)
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_key_without_a_certificate_is_a_usage_error(tmp_path: Path) -> None:
    result = run_wanka(
        "--db", str(tmp_path / "w.duckdb"), "serve", "--tls-key", str(tmp_path / "k.pem")
    )
    assert result.returncode == 2 and "go together" in result.stderr


def test_a_bad_certificate_fails_before_anything_listens(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    result = run_wanka(
        "--db", str(tmp_path / "w.duckdb"), "serve", "--http-port", str(free_port()),
        "--pg-port", "0", "--tls-cert", str(bad), "--tls-key", str(bad),
    )  # fmt: skip
    assert result.returncode == 2 and "cannot use --tls-cert" in result.stderr, result.stderr
