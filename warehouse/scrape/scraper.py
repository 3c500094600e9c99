"""One scrape round: every target's /metrics pulled at once (an async HTTP client), parsed,
and turned into the rows the telemetry store keeps, as Prometheus would have sent them.

Per target, as Prometheus does:

- a GET with `Accept: text/plain;version=0.0.4` and `X-Prometheus-Scrape-Timeout-Seconds`,
  failing after `timeout_s` or past `max_body_bytes`; a non-2xx answer or a body that is not
  the text format fails the scrape;
- the report series `up` (1 or 0), `scrape_duration_seconds` and `scrape_samples_scraped`
  with the target's labels (they go to prom_samples);
- staleness: a series the target returned last round and not this one, and every series of a
  target whose scrape failed, gets a staleness marker at this scrape's time (the scraper
  remembers the last round's series; a new process starts with none).

A round is one set of rows, stored as one batch (`store.store_round`).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import numpy as np

from warehouse.ingest.models import ModelNames
from warehouse.remote_write.rows import Decoded, Series, assemble, series_of
from warehouse.scrape.exposition import BadScrape, Scraped, SeriesKey, parse
from warehouse.scrape.targets import Target

ACCEPT = "text/plain;version=0.0.4;q=1,*/*;q=0.1"
USER_AGENT = "wanka-scraper"


@dataclass(frozen=True)
class Health:
    """A target's last scrape, as wanka.scrape_targets holds it."""

    target: str
    labels: str  # JSON
    up: bool
    at: datetime
    duration_s: float
    samples: int
    error: str | None


@dataclass
class Round:
    rows: Decoded
    health: list[Health]


@dataclass
class _Fetched:
    target: Target
    started_ms: int
    duration_s: float
    body: bytes | None = None
    error: str | None = None


@dataclass
class _Collect:
    """The rows of a round, series by series."""

    models: ModelNames
    known: dict[SeriesKey, int] = field(default_factory=dict)
    series: list[Series] = field(default_factory=list)
    sids: list[np.ndarray] = field(default_factory=list)
    stamps: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    stale: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))

    def sid(self, key: SeriesKey) -> int:
        found = self.known.get(key)
        if found is None:
            found = self.known[key] = len(self.series)
            self.series.append(series_of(dict(key), self.models))
        return found

    def add(self, scraped: Scraped) -> None:
        ids = np.array([self.sid(key) for key in scraped.series], np.int64)
        self.sids.append(ids[scraped.sids] if len(ids) else scraped.sids)
        self.stamps.append(scraped.timestamps_ms)
        self.values.append(scraped.values)

    def mark_stale(self, keys: set[SeriesKey], ms: int) -> None:
        for key in sorted(keys):
            self.stale[0].append(self.sid(key))
            self.stale[1].append(ms)

    def finish(self) -> Decoded:
        def joined(parts: list[np.ndarray], kind: type) -> np.ndarray:
            return np.concatenate(parts) if parts else np.empty(0, kind)

        samples = (
            joined(self.sids, np.int64),
            joined(self.stamps, np.int64),
            joined(self.values, np.float64),
        )
        received = len(samples[0]) + len(self.stale[0])
        return assemble(self.series, samples, self.stale, received)  # type: ignore[arg-type]


class Scraper:
    """Scrapes targets round by round, remembering each target's series for staleness."""

    def __init__(
        self, models: ModelNames, *, timeout_s: float = 10.0, max_body_bytes: int = 64 << 20
    ) -> None:
        self.models = models
        self.timeout_s = timeout_s
        self.max_body_bytes = max_body_bytes
        self._last: dict[Target, set[SeriesKey]] = {}

    def round(self, targets: list[Target]) -> Round:
        """Scrape every target once, concurrently; the round's rows and each target's health."""
        fetched = asyncio.run(self._fetch_all(targets))
        rows = _Collect(self.models)
        health = [self._take(one, rows) for one in fetched]
        for gone in set(self._last) - set(targets):  # a target dropped from the file
            rows.mark_stale(self._last.pop(gone), int(time.time() * 1000))
        decoded = rows.finish()
        decoded.requests = len(targets)
        return Round(decoded, health)

    def _take(self, one: _Fetched, rows: _Collect) -> Health:
        target, ms = one.target, one.started_ms
        scraped: Scraped | None = None
        error = one.error
        if error is None and one.body is not None:
            try:
                scraped = parse(one.body, target.labels, ms)
            except BadScrape as bad:
                error = f"the body is not the Prometheus text format: {bad}"
        samples = len(scraped.values) if scraped is not None else 0
        report = _report(target, ms, scraped is not None, one.duration_s, samples)
        now = set(report.series) | (set(scraped.series) if scraped is not None else set())
        rows.mark_stale(self._last.get(target, set()) - now, ms)
        self._last[target] = now
        if scraped is not None:
            rows.add(scraped)
        rows.add(report)
        return Health(
            target.url,
            json.dumps(dict(target.labels), separators=(",", ":")),
            scraped is not None,
            datetime.fromtimestamp(ms / 1000, UTC),
            one.duration_s,
            samples,
            error,
        )

    async def _fetch_all(self, targets: list[Target]) -> list[_Fetched]:
        headers = {
            "Accept": ACCEPT,
            "User-Agent": USER_AGENT,
            "X-Prometheus-Scrape-Timeout-Seconds": f"{self.timeout_s:g}",
        }
        limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
        async with httpx.AsyncClient(headers=headers, limits=limits, trust_env=False) as client:
            return list(await asyncio.gather(*(self._fetch(client, t) for t in targets)))

    async def _fetch(self, client: httpx.AsyncClient, target: Target) -> _Fetched:
        started = time.time()
        clock = time.perf_counter()
        one = _Fetched(target, int(started * 1000), 0.0)
        try:
            async with asyncio.timeout(self.timeout_s):
                one.body = await self._get(client, target.url, dict(target.headers))
        except TimeoutError:
            one.error = f"the scrape timed out after {self.timeout_s:g} s"
        except httpx.HTTPError as error:
            one.error = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        except _Refused as refused:
            one.error = str(refused)
        one.duration_s = time.perf_counter() - clock
        if one.error is not None:
            one.body = None
        return one

    async def _get(self, client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> bytes:
        async with client.stream("GET", url, timeout=self.timeout_s, headers=headers) as answer:
            if not 200 <= answer.status_code < 300:
                raise _Refused(f"the target answered HTTP {answer.status_code}")
            body = bytearray()
            async for chunk in answer.aiter_bytes():
                body += chunk
                if len(body) > self.max_body_bytes:
                    raise _Refused(f"the body is over {self.max_body_bytes:,} bytes")
            return bytes(body)


class _Refused(Exception):
    pass


def _report(target: Target, ms: int, up: bool, duration_s: float, samples: int) -> Scraped:
    """Prometheus's report series for one scrape."""
    labels = dict(target.labels)
    series = [
        tuple(sorted({**labels, "__name__": name}.items()))
        for name in ("up", "scrape_duration_seconds", "scrape_samples_scraped")
    ]
    return Scraped(
        series,
        np.arange(3, dtype=np.int64),
        np.full(3, ms, np.int64),
        np.array([1.0 if up else 0.0, duration_s, float(samples)]),
    )
