"""The web page on ``/ui``: static files of this package, served by the server itself.

The page (``workload_map/api/static/``: one HTML shell, plain ES modules and one style
sheet, written for this project; no framework, no build step, nothing from a CDN) reads
only this server's own endpoints: REST for lists and the studio, GraphQL for one
workload, GPU totals and definitions, the ``workloadPhaseChanged`` subscription over
``graphql-transport-ws`` for live updates. ``docs/ui.md`` describes it.

The files hold no cluster data, so ``GET /ui/...`` is an open path of
``workload_map.api.auth`` (a browser cannot send a token with a page load); every request
the page then sends carries the bearer token the user entered (kept in
``sessionStorage``, the tab only).
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

UI_PREFIX = "/ui"
STATIC_DIR = Path(__file__).resolve().parent / "static"
"""The page's files, installed as package data of ``workload_map.api.static``."""

SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    # only this server: scripts, styles, images and the GraphQL websocket of the same origin
    "content-security-policy": "default-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


class UiFiles(StaticFiles):
    """Starlette's static files with ``index.html`` for ``/ui/`` and strict security headers.

    Files revalidate on each load (``no-cache``: the ETag answers 304), so an upgraded
    server's page is never mixed with cached modules of the previous release.
    """

    def __init__(self) -> None:
        super().__init__(directory=STATIC_DIR, html=True)

    async def get_response(self, path: str, scope: Scope) -> Response:
        """The file at ``path`` (``index.html`` for the folder), with the page's headers."""
        response = await super().get_response(path, scope)
        response.headers.update(SECURITY_HEADERS)
        response.headers["cache-control"] = "no-cache"
        return response
