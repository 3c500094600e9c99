"""The workbench's Health section in headless Chromium: the counts and flagged rows of
GET /v1/health on the same server, sent with the page's bearer token, and its error text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.serve.server import Server
from tests.browser import Browser
from tests.demo_clusters import FAULTY
from tests.service.http import test_page
from tests.warehouses import Warehouses
from warehouse.health.findings import STATES
from warehouse.security.users import add_user, create_token

#: uvicorn on a loopback port in front of this module's `server` (test_page's fixture).
url = test_page.url

ROWS = """[...document.querySelectorAll('#health-table tbody tr')].map(tr =>
    [tr.className, ...[...tr.cells].map(td => td.textContent)])"""
COUNTS = """Object.fromEntries([...document.querySelectorAll('#health-counts .state')].map(
    b => [b.className.split(' ')[1], b.textContent]))"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, warehouses: Warehouses) -> Iterator[Server]:
    """The faulty demo: one fault of each kind (a silent host, climbing ECC errors, a hot GPU...),
    so the health rules have current findings."""
    yield from test_page.served_demo(tmp_path_factory, warehouses, FAULTY)


@pytest.fixture(scope="module")
def token(server: Server) -> str:
    """A reader's bearer token: the page sends it once it is typed into the token field."""
    cur = server.engine.cursor()
    try:
        add_user(cur, "ops", "reader", "health-page-pw")
        return create_token(cur, "ops")
    finally:
        cur.close()


def expected_rows(report: dict[str, Any]) -> list[list[str]]:
    """The rows the page should show, in no particular order: state, host, gpu or '-', rule,
    count, the newest evidence as `wanka health` prints it, the last evidence's time."""

    def row(host: str, gpu: str, rule: dict[str, Any]) -> list[str]:
        latest = rule["evidence"][0] if rule["evidence"] else {}
        code = f"XID {latest['code']}: " if latest.get("code") is not None else ""
        last = rule["last"].replace("T", " ").removesuffix("+00:00") + " UTC"
        what = latest.get("detail") or latest.get("kind") or ""
        return [rule["state"], host, gpu, rule["rule"], f"{rule['count']:,}", code + what, last]

    rows = [row(n["host"], "-", r) for n in report["nodes"] for r in n["rules"]]
    return rows + [row(g["host"], str(g["gpu"]), r) for g in report["gpus"] for r in g["rules"]]


def set_field(page: Any, field: str, value: str) -> None:
    """Type `value` into the page's input `field` (token, user, password), as a person would."""
    page.evaluate(
        f"(() => {{ const f = document.getElementById({field!r}); f.value = {value!r};"
        "f.dispatchEvent(new Event('change')); })()"
    )


@pytest.mark.slow
def test_workbench_health_shows_the_reports_counts_and_flagged_rows(
    url: str, token: str, tmp_path: Path
) -> None:
    shot = tmp_path / "workbench_health.png"
    bearer = {"Authorization": f"Bearer {token}"}
    report = httpx.get(f"{url}/v1/health", headers=bearer, trust_env=False).json()
    gpus = report["counts"]["gpus"]
    assert report["gpus"] and report["nodes"]  # the injected faults are current findings
    with Browser() as browser:
        page = browser.open(f"{url}/")
        page.until("document.getElementById('health').dataset.loaded !== undefined")
        assert page.evaluate(COUNTS) == {f"state-{s}": f"{gpus[s]:,} {s}" for s in STATES}
        counts = page.evaluate("document.getElementById('health-counts').textContent")
        nodes = report["counts"]
        assert counts.startswith(f"as of {report['as_of'].replace('T', ' ')[:19]} UTC: GPUs ")
        assert counts.endswith(f"{nodes['nodes_flagged']} of {nodes['nodes']} nodes flagged")
        shown = page.evaluate(ROWS)
        loaded = page.evaluate("document.getElementById('health').dataset.loaded")
        assert len(shown) >= 1 and len(shown) == int(loaded)
        # Each row is marked with its finding's state, and says what `wanka health` says.
        assert all(cls == f"state-{cells[0]}" for cls, *cells in shown)
        assert sorted(cells for _, *cells in shown) == sorted(expected_rows(report))
        # Worst first: each host's or GPU's rows together, in order of its worst state.
        entries: dict[tuple[str, str], list[int]] = {}
        for i, (_, _, host, gpu, *_) in enumerate(shown):
            entries.setdefault((host, gpu), []).append(i)
        order = sorted(entries.values())
        assert all(rows == list(range(rows[0], rows[-1] + 1)) for rows in order)
        worst = [max(STATES.index(shown[i][1]) for i in rows) for rows in order]
        assert worst == sorted(worst, reverse=True)
        assert worst[0] == max(STATES.index(row[0]) for row in expected_rows(report))

        # The page sends the token field as a bearer token: a wrong one is the API's 401 ...
        set_field(page, "token", "not-a-token")
        page.until("document.getElementById('health-counts').className === 'error'")
        said = page.evaluate("document.getElementById('health-counts').textContent")
        assert said == "health unavailable (HTTP 401): unknown or revoked token"
        assert page.evaluate(ROWS) == []
        # ... a right one shows the same report again (the reload button fetches it anew).
        set_field(page, "token", token)
        page.until("document.getElementById('health').dataset.loaded !== undefined")
        page.evaluate("document.getElementById('reload-health').click()")
        page.until("document.getElementById('health').dataset.loaded !== undefined")
        assert page.evaluate(ROWS) == shown
        page.screenshot(shot)
        # Only the requests made with the wrong token failed.
        assert page.errors and all("401" in e for e in page.errors), page.errors
    print(f"workbench health screenshot: {shot}")


@pytest.mark.slow
def test_a_person_logs_in_with_user_and_password(url: str, token: str) -> None:
    """`make run` prints a reader's user and password: the page sends them as HTTP Basic and
    shows what that reader may see; a wrong password is the API's 401."""
    report = httpx.get(f"{url}/v1/health", auth=("ops", "health-page-pw"), trust_env=False).json()
    with Browser() as browser:
        page = browser.open(f"{url}/")
        set_field(page, "user", "ops")
        set_field(page, "password", "not-the-password")
        page.until("document.getElementById('health-counts').className === 'error'")
        said = page.evaluate("document.getElementById('health-counts').textContent")
        assert said.startswith("health unavailable (HTTP 401)")
        set_field(page, "password", "health-page-pw")
        page.until("document.getElementById('health').dataset.loaded !== undefined")
        assert sorted(cells for _, *cells in page.evaluate(ROWS)) == sorted(expected_rows(report))
        stored = page.evaluate("JSON.stringify(Object.assign({}, localStorage))")
        assert "health-page-pw" not in stored and '"wanka-user":"ops"' in stored
