"""The HTTP face of `wanka serve`: FastAPI routes over `service.serve.server.Server`."""

from service.http.app import create_app

__all__ = ["create_app"]
