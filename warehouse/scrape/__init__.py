"""Pulling dcgm-exporter (or any Prometheus exporter) targets: file_sd targets, one async
round at a time, stored like remote_write rows (see scraper.py)."""
