"""The GraphQL endpoint: strawberry's ASGI view with our typed context and transports.

HTTP POST/GET queries, GraphiQL in browsers, subscriptions over graphql-transport-ws
(and the legacy graphql-ws) on the same path, and over SSE (``Accept:
text/event-stream``) or multipart HTTP.

Identity: HTTP requests carry the guard ``server.api.auth.AuthMiddleware`` stored; a
websocket either authenticated its upgrade request the same way or authenticates in
``on_ws_connect`` from the ``connection_init`` payload (``{"Authorization": "Bearer
<token>"}``); until then its context allows nothing, and strawberry runs no operation
before the connection is acknowledged. A refused websocket is closed (4403 with
graphql-transport-ws). At most ``settings.http.max_subscriptions`` subscriptions run per
connection.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import (
    GRAPHQL_SSE_PROTOCOL,
    GRAPHQL_TRANSPORT_WS_PROTOCOL,
    GRAPHQL_WS_PROTOCOL,
    MULTIPART_SUBSCRIPTION_PROTOCOL,
)
from strawberry.types.unset import UnsetType

from schema.context import Context
from schema.cost import CostLimits
from schema.schema import COST_LIMITS_KEY, schema
from server.api.auth import GUARD_KEY
from server.api.runtime import runtime_of
from server.auth.access import UNAUTHENTICATED, Guard
from server.auth.identity import payload_token
from server.errors import CacheNotReady, ServerError

log = logging.getLogger(__name__)

PROTOCOLS = (GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL, GRAPHQL_SSE_PROTOCOL, MULTIPART_SUBSCRIPTION_PROTOCOL)


class GraphQLApp(GraphQL[Context, None]):
    """strawberry's view whose context is :class:`schema.context.Context`."""

    def parse_json(self, data: str | bytes) -> Any:
        """Decode a JSON request body (or ``variables``/``extensions`` parameter): an object.

        strawberry 0.341 assumes an object and fails with a 500 on ``"text"``, ``5`` or bytes
        that are not UTF-8 (found by ``tests/auth/test_fuzz.py``).

        Raises:
            HTTPException: 400 when the JSON is not an object (or a batch list).
        """
        try:
            value = super().parse_json(data)
        except (UnicodeDecodeError, RecursionError):
            raise HTTPException(400, "the GraphQL request is not readable JSON (not UTF-8, or nested too "
                                     "deeply)") from None
        if not isinstance(value, (dict, list)):
            raise HTTPException(400, f"the GraphQL request must be a JSON object, got {type(value).__name__}")
        return value

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        """Build the per-request context from the app runtime and the request's guard.

        Raises:
            CacheNotReady: start-up has not attached a reader yet.
        """
        runtime = runtime_of(request)
        if runtime.service is None or runtime.registrar is None:
            raise CacheNotReady("the server is starting; retry shortly")
        request.scope[COST_LIMITS_KEY] = CostLimits(max_cost=runtime.settings.http.graphql_max_cost)
        guard = request.scope.get(GUARD_KEY)
        return Context(service=runtime.service, registrar=runtime.registrar, cluster=runtime.cluster,
                       is_ready=runtime.is_ready, guard=guard if isinstance(guard, Guard) else UNAUTHENTICATED,
                       request=request, response=response)

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        """Authenticate a websocket from its ``connection_init`` payload (unless its upgrade
        request already did).

        Raises:
            ConnectionRejectionError: no valid token (payload: ``{code, message}``).
        """
        if context.guard is not UNAUTHENTICATED:
            return await super().on_ws_connect(context)
        access = runtime_of(context.request).access
        try:
            if access is None:
                raise CacheNotReady("the server is starting; retry shortly")
            caller = await access.authenticate(payload_token(context.connection_params))
        except ServerError as exc:
            raise ConnectionRejectionError({"code": exc.code, "message": str(exc)}) from None
        context.guard = Guard(access, caller)
        return await super().on_ws_connect(context)


def graphql_app(*, max_subscriptions: int = 16) -> GraphQLApp:
    """The ASGI app serving ``/graphql`` (HTTP and WebSocket)."""
    return GraphQLApp(schema, graphql_ide="graphiql", subscription_protocols=PROTOCOLS, keep_alive=True,
                      keep_alive_interval=15, max_subscriptions_per_connection=max_subscriptions)
