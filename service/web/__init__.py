"""The browser face: a SQL workbench at `/`, the visual report at `/report`, the analyses as
examples (`/v1/analyses`). Mounted on the HTTP app by `service.http.create_app`."""

from service.web.routes import router

__all__ = ["router"]
