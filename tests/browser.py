"""Headless Chromium driven over the DevTools protocol, for tests of the pages wanka serves.

    with Browser() as browser:
        page = browser.open("file:///tmp/report.html")
        page.evaluate("document.querySelectorAll('svg').length")
        page.errors        # console errors, uncaught exceptions, failed requests
        page.screenshot(path)

Chromium is Debian's (`apt-get install chromium`); the test fails, not skips, under CI=true
when it is missing. Waiting is on protocol events (load, a JS condition polled by the
browser itself), never on sleeps.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1280,2000",
)


def chromium() -> str:
    """The Chromium binary; missing is a failure under CI=true and a skip elsewhere."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        message = "chromium is not installed (apt-get install -y chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


class Page:
    """One tab: evaluate JavaScript, collect console errors, take screenshots."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self.errors: list[str] = []
        self._events: list[dict[str, Any]] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Call a protocol method and return its result, noting the events that arrive."""
        call = next(self._ids)
        self._ws.send(json.dumps({"id": call, "method": method, "params": params}))
        while True:
            message: dict[str, Any] = json.loads(self._ws.recv(timeout=60))
            if message.get("id") == call:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._note(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The next event `method` (or one that came already)."""
        for event in self._events:
            if event["method"] == method:
                self._events.remove(event)
                return event
        while True:
            message: dict[str, Any] = json.loads(self._ws.recv(timeout=60))
            self._note(message)
            if message.get("method") == method:
                self._events.remove(message)
                return message

    def _note(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            return
        self._events.append(message)
        params = message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a)) for a in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            self.errors.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.errors.append(params["entry"].get("text", ""))
        elif method == "Network.loadingFailed":
            self.errors.append(f"request failed: {params.get('errorText')}")

    def evaluate(self, expression: str, *, wait: bool = False) -> Any:
        """The value of a JavaScript expression (awaited when it is a promise)."""
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=wait
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def until(self, condition: str, timeout_ms: int = 20_000) -> None:
        """Wait, in the browser, until a JavaScript condition holds (polled per animation frame)."""
        ok = self.evaluate(
            "new Promise(done => { const end = performance.now() + " + str(timeout_ms) + ";"
            "(function check() { if (" + condition + ") return done(true);"
            "if (performance.now() > end) return done(false); requestAnimationFrame(check); })();"
            "})",
            wait=True,
        )
        assert ok, f"timed out waiting for: {condition}"

    def screenshot(self, path: Path) -> Path:
        """A full-page PNG at `path`."""
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(data["data"]))
        return path


class Browser:
    """A headless Chromium process with its own profile folder, closed on exit."""

    def __enter__(self) -> Browser:
        # Chromium may still flush its profile as it exits: leftovers are not an error.
        self._profile = tempfile.TemporaryDirectory(
            prefix="wanka-chromium-", ignore_cleanup_errors=True
        )
        self._proc = subprocess.Popen(
            [chromium(), *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stderr is not None
        for line in self._proc.stderr:  # Chromium says where its DevTools endpoint is
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                self._endpoint = found[1]
                break
        else:
            raise RuntimeError("chromium exited before opening its DevTools endpoint")
        # Keep reading its log so a chatty Chromium never blocks on a full pipe.
        stderr = self._proc.stderr
        threading.Thread(target=lambda: stderr.read(), daemon=True).start()
        self._browser_ws = connect(
            self._endpoint, max_size=None, open_timeout=30, proxy=None, legacy=True
        )
        return self

    def open(self, url: str) -> Page:
        """A new tab at `url`, loaded, with console and network errors being collected."""
        host = self._endpoint.split("/devtools/")[0]
        ids = itertools.count(1)

        def call(method: str, **params: Any) -> dict[str, Any]:
            call_id = next(ids)
            self._browser_ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
            while True:
                message: dict[str, Any] = json.loads(self._browser_ws.recv(timeout=60))
                if message.get("id") == call_id:
                    result: dict[str, Any] = message["result"]
                    return result

        target = call("Target.createTarget", url="about:blank")["targetId"]
        page = Page(
            connect(
                f"{host}/devtools/page/{target}",
                max_size=None,
                open_timeout=30,
                proxy=None,
                legacy=True,
            )
        )
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.send(f"{domain}.enable")
        page.send("Page.navigate", url=url)
        page.wait_for("Page.loadEventFired")
        return page

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._browser_ws.close()
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._profile.cleanup()
