"""Cross-site request refusal: a web page the user opens must not write to this server.

A browser sends a cross-origin ``POST`` without asking first ("simple request") when its
body is ``text/plain``, a form, or has no type at all, and it attaches the ``Origin`` of
the page (Fetch standard, "CORS-safelisted request-header",
https://fetch.spec.whatwg.org/#cors-safelisted-request-header; MDN "Cross-Origin Resource
Sharing"). With ``--auth none`` such a request would register a definition. So, for
every writing method (``POST``, ``PUT``, ``PATCH``, ``DELETE``; other methods reach the
router, which answers 405):

* a request whose ``Origin`` is neither this server's own (scheme and ``Host``) nor one of
  ``allowed_origins`` (``--cors-origin``) is refused with 403 ``cross_origin_refused``;
* a body must be ``application/json``, ``application/yaml`` or, on ``/graphql``, also
  ``application/graphql``; anything else (or no ``Content-Type``) is refused with 415
  ``unsupported_media_type``. Those types are not CORS-safelisted, so a browser must send
  a preflight first, which only origins in ``allowed_origins`` pass.

First of all, DNS rebinding (issue 29 item 4): a page on ``evil.example`` whose DNS name
is switched to ``127.0.0.1`` sends ``Host`` and ``Origin`` both naming ``evil.example``,
so "same origin" holds. A write is therefore refused with 403 ``host_not_allowed`` unless
its ``Host`` (port aside) is an IP address literal, a name without a dot (``localhost``, a
Kubernetes service's short name: public DNS, which a rebinding page needs, does not serve
them), a ``.localhost`` name (RFC 6761 section 6.3: loopback), the ``--host`` the server
listens on, or in ``allowed_hosts`` (``--allowed-hosts``; an entry ``.example.com``
allows its subdomains, ``*`` any host). The chart passes the Service's DNS names.

``GET`` stays open: its answer cannot be read by another origin without CORS headers,
and mutations over ``GET`` are refused by the GraphQL view (405-like 400). WebSocket
handshakes are checked by strawberry's view against the same ``allowed_origins``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from workload_map.api.errors import error_response, is_graphql
from workload_map.logs import logger

log = logger(__name__)

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WRITE_TYPES = ("application/json", "application/yaml")
GRAPHQL_TYPES = ("application/json", "application/graphql", "application/graphql+json")
DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]`` lowercased, default port dropped (RFC 6454 section 6.2)."""
    scheme, _, rest = origin.strip().lower().partition("://")
    host, _, port = rest.rstrip("/").partition(":")
    return f"{scheme}://{host}" if not port or DEFAULT_PORTS.get(scheme) == port else f"{scheme}://{host}:{port}"


def media_type(headers: Headers) -> str:
    """The ``Content-Type`` without parameters, lowercased ("" when absent)."""
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


class CrossSiteMiddleware:
    """Refuse cross-origin writes and writes with a media type a browser may send unasked.

    Args:
        app: the wrapped ASGI app.
        allowed_origins: origins (``https://portal.example.com``) allowed besides this
            server's own.
        allowed_hosts: ``Host`` names writes may name besides the defaults (module doc).
    """

    def __init__(self, app: ASGIApp, allowed_origins: Iterable[str] = (), allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = HostAllowList(allowed_hosts)
        origins = list(allowed_origins)
        self.any_origin = "*" in origins
        self.allowed = frozenset(normalize_origin(o) for o in origins if o != "*")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: pass reads and allowed writes on; answer a refused write (:meth:`refusal`)."""
        if scope["type"] != "http" or scope.get("method", "GET") not in WRITE_METHODS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self.refusal(scope, headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, code, message = refusal
        log.info("refused %s %s: %s", scope.get("method"), scope.get("path"), message)
        await error_response(status, code, message, graphql=is_graphql(scope))(scope, receive, send)

    def refusal(self, scope: Scope, headers: Headers) -> tuple[int, str, str] | None:
        """(status, code, message) when the request must be refused, else None."""
        host = headers.get("host", "")
        if not self.hosts.allows(host):
            return 403, "host_not_allowed", (
                f"writes addressed to Host {host!r} are refused (a DNS rebinding page sends its own name); "
                "start the server with --allowed-hosts naming it")
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(scope, headers, origin):
            return 403, "cross_origin_refused", (
                f"requests from origin {origin!r} may not write here; serve the portal from this server's "
                "origin or start the server with --cors-origin for it")
        if scope.get("method") == "DELETE" and not headers.get("content-length", "0").strip("0"):
            return None  # no body to type
        accepted = GRAPHQL_TYPES if scope.get("path", "").rstrip("/") == "/graphql" else WRITE_TYPES
        found = media_type(headers)
        if found not in accepted:
            shown = repr(found) if found else "no Content-Type"
            return 415, "unsupported_media_type", (f"{shown} is not accepted here; send the body as "
                                                   f"{' or '.join(accepted)}")
        return None

    def origin_allowed(self, scope: Scope, headers: Headers, origin: str) -> bool:
        """True for this server's own origin (same scheme and ``Host``) or an allowed one."""
        normalized = normalize_origin(origin)
        if self.any_origin or normalized in self.allowed:
            return True
        host = headers.get("host")
        return host is not None and normalized == normalize_origin(f"{scope.get('scheme', 'http')}://{host}")


class HostAllowList:
    """The ``Host`` names writes may be addressed to (module doc: the defaults and the entries).

    Args:
        entries: names (``wmap.example.com``), suffixes (``.example.com``) or ``*``.
    """

    def __init__(self, entries: Iterable[str] = ()) -> None:
        names = {e.strip().lower().rstrip(".") for e in entries if e.strip()}
        self.any = "*" in names
        self.suffixes = tuple(n for n in names if n.startswith("."))
        self.names = frozenset(n for n in names if not n.startswith("."))

    def allows(self, host: str) -> bool:
        """True when ``host`` (a ``Host`` header, port included or not) may receive writes."""
        name = host_name(host)
        if self.any or not name:
            return self.any
        if "." not in name or name.endswith(".localhost") or name in self.names or name.endswith(self.suffixes):
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True


def host_name(host: str) -> str:
    """The name of a ``Host`` header value, lowercased, without port, brackets or a final dot."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def cors_middleware(origins: tuple[str, ...]) -> list[Middleware]:
    """Starlette's ``CORSMiddleware`` for ``origins`` (empty: none, CORS stays off).

    Preflight (``OPTIONS`` with ``Access-Control-Request-Method``) is answered for the
    listed origins; methods GET, POST, DELETE; headers ``Content-Type`` and
    ``Authorization`` (bearer tokens, not cookies: no credentials mode).
    """
    if not origins:
        return []
    return [Middleware(CORSMiddleware, allow_origins=list(origins), allow_methods=["GET", "POST", "DELETE"],
                       allow_headers=["Content-Type", "Authorization"], max_age=600)]
