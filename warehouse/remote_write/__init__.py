"""Prometheus remote_write: decoding WriteRequests into telemetry rows."""
