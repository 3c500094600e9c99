"""Pulling instead of being sent: dcgm-exporter (or any Prometheus exporter) scraped without a
Prometheus, and Slurm polled, as threads of `wanka serve` or one round of `wanka scrape`.

`targets` reads Prometheus file_sd files (its default relabelling: `__address__`, `__scheme__`,
`__metrics_path__`, `instance`, `job`); `exposition` parses a scrape body with the dcgm reader's
parser and adds the target's labels; `scraper` runs a round of async GETs (httpx) with
Prometheus's report series and staleness markers; `store` writes a round as one batch through the
telemetry store's append (`warehouse.tsdb.append`: a sample already stored is not stored again),
with `wanka.scrape_targets`. `slurm` polls sacct and scontrol into the existing readers
(`warehouse.ingest`), replacing rows by key.
"""
