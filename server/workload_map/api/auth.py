"""Authentication at the edge: every request gets a ``Guard`` before any handler runs.

:class:`AuthMiddleware` (pure ASGI) reads ``Authorization: Bearer <token>``, asks the
runtime's policy (``workload_map.auth.access``) who the caller is, and stores the resulting
``Guard`` in the scope (``wmap.guard``); a missing or rejected token is answered with a
JSON 401 (``WWW-Authenticate: Bearer``) and the handler never runs. Open paths:
``/livez``, ``/readyz``, ``/healthz``, the static GraphiQL page a browser opens (``/``, which
redirects to it, ``GET /graphql`` asking for ``text/html`` without a ``query`` parameter, and
its npm files under ``/graphiql/assets/``, and the web page's static files under ``/ui``
(``workload_map.api.ui``): they hold no cluster data, and a browser cannot send a token
with a page load; the queries the pages send need one) and, with
``settings.metrics_public``, ``/metrics`` (otherwise ``/metrics`` needs ``get`` on the non-resource URL ``/metrics``, as
kube-apiserver's own does).

WebSockets (GraphQL subscriptions) may authenticate with the header on the upgrade request
or, as browsers cannot set it, in the ``connection_init`` payload (``workload_map.api.graphql``);
a websocket with a header that does not authenticate is refused before it is accepted.
"""

from __future__ import annotations


from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from workload_map.api.errors import is_graphql, response_for
from workload_map.api.graphiql import ASSETS_PREFIX
from workload_map.api.runtime import Runtime
from workload_map.api.ui import UI_PREFIX
from workload_map.auth.access import Guard
from workload_map.auth.identity import bearer_token
from workload_map.errors import CacheNotReady, Forbidden, ServerError, Unauthorized
from workload_map.logs import logger

log = logger(__name__)

OPEN_PATHS = frozenset({"/livez", "/readyz", "/healthz"})
GUARD_KEY = "wmap.guard"


class AuthMiddleware:
    """Authenticate HTTP requests and websocket upgrades (see the module docstring).

    Args:
        app: the next ASGI app.
        runtime: holds the policy (``runtime.access``, set at start-up) and the settings.
    """

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point (the ASGI specification's application call)."""
        if scope["type"] not in ("http", "websocket") or self._is_open(scope):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        header = conn.headers.get("authorization")
        try:
            guard = await self._guard(scope, header)
        except ServerError as exc:
            await self._refuse(scope, receive, send, exc)
            return
        if guard is not None:
            scope[GUARD_KEY] = guard
        await self.app(scope, receive, send)

    def _is_open(self, scope: Scope) -> bool:
        path = scope["path"]
        if path in OPEN_PATHS or (path == "/metrics" and self.runtime.settings.metrics_public):
            return True
        if scope["type"] != "http" or scope.get("method") != "GET":
            return False
        if path in ("/", UI_PREFIX) or path.startswith((ASSETS_PREFIX, UI_PREFIX + "/")):
            return True
        page = path.rstrip("/") == "/graphql" and b"query=" not in scope.get("query_string", b"")
        return page and "text/html" in HTTPConnection(scope).headers.get("accept", "")

    async def _guard(self, scope: Scope, header: str | None) -> Guard | None:
        """The request's guard; None for a websocket without a header (authenticated later).

        Raises:
            Unauthorized / Forbidden / CacheNotReady / ReviewUnavailable.
        """
        access = self.runtime.access
        if access is None:
            raise CacheNotReady("the server is starting; retry shortly")
        if access.is_open:
            return Guard(access, await access.authenticate(None))
        if scope["type"] == "websocket" and header is None:
            return None
        token = bearer_token(header)
        if header is not None and token is None:
            raise Unauthorized("the Authorization header must be 'Bearer <token>'")
        guard = Guard(access, await access.authenticate(token))
        if scope["path"] == "/metrics" and not await guard.allows("get", path="/metrics"):
            raise Forbidden(f"user {guard.caller.name!r} may not get /metrics")
        return guard

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, exc: ServerError) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": exc.code})
            return
        await response_for(exc, graphql=is_graphql(scope))(scope, receive, send)


def guard_of(conn: HTTPConnection) -> Guard:
    """The guard :class:`AuthMiddleware` stored for this request.

    Raises:
        Unauthorized: none was stored (a websocket that has not authenticated yet).
    """
    guard = conn.scope.get(GUARD_KEY)
    if not isinstance(guard, Guard):
        raise Unauthorized("a bearer token is required (Authorization: Bearer <token>)")
    return guard
