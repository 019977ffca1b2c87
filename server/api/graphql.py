"""The GraphQL endpoint: strawberry's ASGI view with our typed context and transports.

HTTP POST/GET queries, GraphiQL in browsers, subscriptions over graphql-transport-ws
(and the legacy graphql-ws) on the same path, and over SSE (``Accept:
text/event-stream``) or multipart HTTP.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.subscriptions import (
    GRAPHQL_SSE_PROTOCOL,
    GRAPHQL_TRANSPORT_WS_PROTOCOL,
    GRAPHQL_WS_PROTOCOL,
    MULTIPART_SUBSCRIPTION_PROTOCOL,
)

from schema.context import Context
from schema.schema import schema
from server.api.runtime import runtime_of
from server.errors import CacheNotReady

PROTOCOLS = (GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL, GRAPHQL_SSE_PROTOCOL, MULTIPART_SUBSCRIPTION_PROTOCOL)


class GraphQLApp(GraphQL[Context, None]):
    """strawberry's view whose context is :class:`schema.context.Context`."""

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        """Build the per-request context from the app runtime.

        Raises:
            CacheNotReady: start-up has not attached a reader yet.
        """
        runtime = runtime_of(request)
        if runtime.service is None or runtime.registrar is None:
            raise CacheNotReady("the server is starting; retry shortly")
        return Context(service=runtime.service, registrar=runtime.registrar, cluster=runtime.cluster,
                       is_ready=runtime.is_ready, request=request, response=response)


def graphql_app() -> GraphQLApp:
    """The ASGI app serving ``/graphql`` (HTTP and WebSocket)."""
    return GraphQLApp(schema, graphql_ide="graphiql", subscription_protocols=PROTOCOLS, keep_alive=True,
                      keep_alive_interval=15)
