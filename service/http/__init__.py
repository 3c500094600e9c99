"""The HTTP face of `wanka serve`: FastAPI routes over `service.serve.server.Server`.

`app` builds the app (errors as `{"error": ...}`, statuses by exception class); `auth` takes
Basic or Bearer credentials (one checked in the last minute is known without leaving the event
loop); one router per area (`routes_query`, `routes_catalog`, `routes_ingest`, `routes_prom` the
PromQL API, `routes_promwrite` remote_write, `routes_web` the browser page from `static/`, the
report and the analyses); `stream` encodes each Arrow batch as it arrives (a result that fits
its first batches is answered in one piece); `workers` is the thread pool blocking work runs on.
`fastpath` answers `POST /v1/query` in front of FastAPI's middleware and routing with the same
validation, credentials, answer and error texts (the route still documents it and serves what
the fast path leaves), and `quick` remembers texts seen to be quick (read-only, answered in one
piece, under 2 ms of CPU) and answers them on the event loop without the thread hop, under a
50 ms deadline past which the query is interrupted and run again on the pool; a run over 10 ms
makes a text slow again. Routes translate; no business rule lives in one.
"""

from service.http.app import create_app

__all__ = ["create_app"]
