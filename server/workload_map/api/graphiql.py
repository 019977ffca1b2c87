"""GraphiQL served by this server: strawberry's page, its scripts and styles local when fetched.

Strawberry's GraphiQL page (``strawberry/static/graphiql.html``) loads seven files from a
public CDN, each with a ``sha384`` subresource-integrity attribute
(https://developer.mozilla.org/en-US/docs/Web/Security/Subresource_Integrity), so in an
air-gapped cluster the page stays blank. ``graphiql/fetch.py`` (``make install``, the
Dockerfile) unpacks the pinned npm packages into an assets folder; when every file the
page names is there and matches its integrity attribute, the page is rewritten to load
them from ``/graphiql/assets/<name>@<version>/<path>`` (the integrity attributes are kept,
so the browser checks them too). Otherwise the page keeps the CDN URLs and the server
logs why, once, at start.

Only the files the page names are served (no directory listing, no other path).
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from msgspec import Struct
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from workload_map.api.errors import error_response
from workload_map.logs import logger

log = logger(__name__)

ASSETS_PREFIX = "/graphiql/assets/"
_ASSET = re.compile(r'(?P<attr>src|href)="(?P<cdn>https://[^/"]+/)(?P<spec>(?:@[^/"]+/)?[^/@"]+@[^/"]+)/'
                    r'(?P<path>[^"]+)"(?P<gap>\s+)integrity="(?P<integrity>sha(?:256|384|512)-[^"]+)"')
CONTENT_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


class Asset(Struct, frozen=True):
    """One file the page loads: ``spec`` (``graphiql@3.8.3``), ``path`` in the package, integrity."""

    spec: str
    path: str
    integrity: str
    cdn: str = ""

    @property
    def url(self) -> str:
        """Where this server serves it."""
        return f"{ASSETS_PREFIX}{self.spec}/{self.path}"


def graphql_ide_page() -> str:
    """Strawberry's GraphiQL page as it ships (CDN URLs)."""
    from strawberry.http.ides import get_graphql_ide_html

    return str(get_graphql_ide_html(graphql_ide="graphiql"))


def page_assets(html: str) -> list[Asset]:
    """Every CDN file (with an integrity attribute) that ``html`` loads, in page order."""
    return [Asset(m["spec"], m["path"], m["integrity"], m["cdn"]) for m in _ASSET.finditer(html)]


def digest(algorithm_integrity: str, data: bytes) -> bool:
    """True when ``data`` matches the subresource-integrity value (``sha384-<base64>``)."""
    algorithm, _, expected = algorithm_integrity.partition("-")
    return base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == expected


class GraphiQLPage:
    """The GraphiQL page and its local assets.

    Args:
        html: strawberry's page (CDN URLs).
        assets_dir: where ``graphiql/fetch.py`` unpacked the packages
            (``<dir>/<name>@<version>/<path>``); None or missing: CDN.

    Attributes:
        local: True when every asset is served from ``assets_dir``.
        reason: why the CDN is used (empty when local).
    """

    def __init__(self, html: str, assets_dir: Path | None) -> None:
        self.assets = page_assets(html)
        self._files: dict[str, Path] = {}
        self.reason = self._load(assets_dir)
        self.local = not self.reason
        self.html = _ASSET.sub(lambda m: f'{m["attr"]}="{ASSETS_PREFIX}{m["spec"]}/{m["path"]}"{m["gap"]}'
                               f'integrity="{m["integrity"]}"', html) if self.local else html

    def _load(self, assets_dir: Path | None) -> str:
        """Check every asset on disk; returns the reason to fall back to the CDN, or ``""``."""
        if not self.assets:
            return "the GraphiQL page names no CDN asset to replace"
        if assets_dir is None or not assets_dir.is_dir():
            return f"no GraphiQL assets folder {assets_dir} (run `make install` or graphiql/fetch.py)"
        files: dict[str, Path] = {}
        for asset in self.assets:
            path = assets_dir / asset.spec / asset.path
            try:
                data = path.read_bytes()
            except OSError:
                return f"{path} is missing (run graphiql/fetch.py)"
            if not digest(asset.integrity, data):
                return f"{path} does not match the page's integrity {asset.integrity}"
            files[asset.url] = path
        self._files = files
        return ""

    def log_source(self) -> None:
        """One log line: where browsers load GraphiQL from."""
        if self.local:
            log.info("GraphiQL at /graphql loads its %d assets from this server (%s)", len(self.assets), ASSETS_PREFIX)
        else:
            cdn = ", ".join(sorted({a.cdn for a in self.assets})) or "-"
            log.warning("GraphiQL at /graphql loads its assets from the CDN %s (blank page without internet "
                        "access): %s", cdn, self.reason)

    async def serve_asset(self, request: Request) -> Response:
        """``GET /graphiql/assets/<name>@<version>/<path>``: one file the page names, else a JSON 404."""
        if request.method not in ("GET", "HEAD"):
            return error_response(405, "method_not_allowed", "GraphiQL assets are read with GET",
                                  headers={"allow": "GET, HEAD"})
        path = self._files.get(request.url.path)
        if path is None:
            return error_response(404, "not_found", f"no GraphiQL asset {request.url.path}")
        return Response(path.read_bytes(), media_type=CONTENT_TYPES.get(path.suffix, "application/octet-stream"),
                        headers={"cache-control": "public, max-age=31536000, immutable",
                                 "x-content-type-options": "nosniff"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry, mounted at ``/graphiql/assets`` (browsers' files, not part of /openapi.json)."""
        response = await self.serve_asset(Request(scope, receive))
        await response(scope, receive, send)
