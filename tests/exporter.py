"""A local HTTP endpoint serving dcgm-exporter text that changes every scrape, for tests that
point a real Prometheus (or wanka's own scraper) at it.

The text is what dcgm-exporter 3.x prints: `# HELP`/`# TYPE` lines, then one sample per GPU and
field with its `gpu`, `UUID`, `device`, `modelName`, `Hostname` and driver labels, no
timestamps. Each GET of /metrics is one scrape: values are a function of the scrape number, so
every scrape's samples differ. A `mode` makes it misbehave as real targets do: "slow" answers
after `delay_s`, "error" with 500, "garbage" with text that is not the exposition format.
"""

from __future__ import annotations

import threading
import time
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %)."),
    "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W)."),
    "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C)."),
    "DCGM_FI_DEV_XID_ERRORS": ("gauge", "Value of the last XID error encountered."),
    "DCGM_FI_PROF_NVLINK_TX_BYTES": ("counter", "The rate of data transmitted over NVLink."),
}


class Exporter:
    """Serves /metrics on 127.0.0.1 (a free port) until closed."""

    def __init__(
        self,
        host: str = "node001",
        gpus: int = 4,
        *,
        mode: str = "ok",
        delay_s: float = 0.0,
        drop_gpu_after: int | None = None,
    ) -> None:
        self.host, self.gpus, self.mode, self.delay_s = host, gpus, mode, delay_s
        self.drop_gpu_after = drop_gpu_after  # the last GPU vanishes after this many scrapes
        self.scrapes = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Exporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def next_text(self) -> str:
        with self._lock:
            self.scrapes += 1
            n = self.scrapes
        gpus = self.gpus
        if self.drop_gpu_after is not None and n > self.drop_gpu_after:
            gpus -= 1
        lines: list[str] = []
        for field, (kind, help_text) in FIELDS.items():
            lines += [f"# HELP {field} {help_text}", f"# TYPE {field} {kind}"]
            for gpu in range(gpus):
                labels = (
                    f'gpu="{gpu}",UUID="GPU-{self.host}-{gpu:02d}",device="nvidia{gpu}",'
                    f'modelName="NVIDIA H100 80GB HBM3",Hostname="{self.host}",'
                    f'DCGM_FI_DRIVER_VERSION="535.129.03"'
                )
                lines.append(f"{field}{{{labels}}} {value(field, gpu, n)}")
        return "\n".join(lines) + "\n"


def value(field: str, gpu: int, scrape: int) -> str:
    """The text of a sample's value: integers for gauges, a growing counter for NVLink."""
    if field == "DCGM_FI_PROF_NVLINK_TX_BYTES":
        return str(scrape * 1_000_000_007 + gpu)
    if field == "DCGM_FI_DEV_POWER_USAGE":
        return f"{100 + (scrape * 7 + gpu) % 600}.{gpu}25"
    if field == "DCGM_FI_DEV_XID_ERRORS":
        return "0" if scrape < 3 else "79"
    return str((scrape * 13 + gpu * 5) % 101)


def _handler(exporter: Exporter) -> Any:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if exporter.mode == "error":
                self.send_error(500, "exporter failed")
                return
            if exporter.mode == "slow":
                time.sleep(exporter.delay_s)
            text = (
                "{{{{ this is not the exposition format\n"
                if exporter.mode == "garbage"
                else exporter.next_text()
            )
            payload = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):  # a scraper that gave up
                self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    return Handler
