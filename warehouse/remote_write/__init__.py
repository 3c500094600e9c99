"""Prometheus Remote-Write 1.0 without HTTP: a request body checked whole, then stored once.

`messages` builds the prompb messages from their descriptors at import (upb parses them; no
generated code); `decode` checks a whole body before anything is stored (snappy, limits, names,
the time window) and turns it into `rows` — its distinct series (remembered across requests: a
series' labels are read as raw bytes, the key of a process-wide cache of label sets), samples
and staleness markers — with `fastpath` a vectorised decode of the shape Prometheus sends;
`labels` maps a label set to gpu_metrics columns and back exactly. The decoded rows are stored
by the telemetry store's append (`warehouse.tsdb.append`), which keeps every sample (series, ts)
not already held, so a retried delivery stores nothing twice. `service/serve/remote_write.py`
group-commits concurrent requests; `service/http/routes_promwrite.py` is POST /api/v1/write. The
scraper (`warehouse.scrape`) stores its rounds through the same append.
"""
