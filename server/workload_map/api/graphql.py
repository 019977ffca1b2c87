"""The GraphQL endpoint: strawberry's ASGI view with our typed context and transports.

HTTP POST/GET queries, GraphiQL in browsers, subscriptions over graphql-transport-ws
(and the legacy graphql-ws) on the same path, and over SSE (``Accept:
text/event-stream``) or multipart HTTP.

Identity: HTTP requests carry the guard ``workload_map.api.auth.AuthMiddleware`` stored; a
websocket either authenticated its upgrade request the same way or authenticates in
``on_ws_connect`` from the ``connection_init`` payload (``{"Authorization": "Bearer
<token>"}``); until then its context allows nothing, and strawberry runs no operation
before the connection is acknowledged. A refused websocket is closed (4403 with
graphql-transport-ws). At most ``settings.http.max_subscriptions`` subscriptions run per
connection.

Queries run off the event loop (:mod:`workload_map.api.offload`): parsing, the cost check,
validation, execution and the JSON encoding of the answer happen in the query thread, and
a mutation found there is executed back on the server's loop (its writes, registrations
and API clients belong to it). Subscriptions (websocket, SSE, multipart) stay on the loop:
they mostly wait for changes.
"""

from __future__ import annotations

import asyncio
import threading
from contextvars import ContextVar
from collections.abc import Hashable, Mapping
from typing import Any

from cross_web import AsyncHTTPRequestAdapter, FormData
from cross_web import HTTPException as StrawberryHTTPException
from graphql import GraphQLError, OperationDefinitionNode, OperationType, parse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLRequestData
from strawberry.http.types import HTTPMethod
from strawberry.types import ExecutionResult
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler
from strawberry.subscriptions import (
    GRAPHQL_SSE_PROTOCOL,
    GRAPHQL_TRANSPORT_WS_PROTOCOL,
    GRAPHQL_WS_PROTOCOL,
    MULTIPART_SUBSCRIPTION_PROTOCOL,
)
from strawberry.types.unset import UnsetType

from workload_map.api.answers import AnswerCache, Key, reads_views_only, request_key, stamp
from workload_map.graphql.context import Context
from workload_map.graphql.cost import CostLimits, QueryRefused, select_operation
from workload_map.graphql.schema import CACHE_SIZE, COST_LIMITS_KEY, MAX_TOKENS, SafeParserCache, schema
from workload_map.api.auth import GUARD_KEY
from workload_map.api.crosssite import media_type
from workload_map.api.errors import HTTP_CODES, error_response
from workload_map.api.graphiql import GraphiQLPage
from workload_map.api.offload import QUERIES, on_loop
from workload_map.graphql.stopping import STOP_KEY
from workload_map.api.runtime import runtime_of
from workload_map.auth.access import UNAUTHENTICATED, Guard
from workload_map.auth.identity import payload_token
from workload_map.errors import CacheNotReady, ServerError
from workload_map.logs import logger

log = logger(__name__)

PROTOCOLS = (GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL, GRAPHQL_SSE_PROTOCOL, MULTIPART_SUBSCRIPTION_PROTOCOL)


SUBSCRIPTION_HINT = ("; subscriptions need a stream: open a websocket (graphql-transport-ws) on /graphql or send "
                     "the POST with Accept: text/event-stream")


def transport_error(status: int, message: str) -> JSONResponse:
    """A GraphQL transport error in both shapes clients read.

    Ours (``error``, ``message``) and GraphQL's (``errors[0].message``,
    ``errors[0].extensions.code`` from the documented set, e.g. ``BAD_REQUEST``).
    """
    return error_response(status, HTTP_CODES.get(status, "error"), message, graphql=True)


class OwnErrorsHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """strawberry's graphql-transport-ws handler where a bad operation ends only itself.

    strawberry closes the whole socket (4400) on a syntax error or an operation type it
    cannot determine, ending every other subscription on it. Here such an operation gets
    an ``error`` message for its id (the protocol's "operation execution error",
    https://github.com/enisdenjo/graphql-ws/blob/master/PROTOCOL.md#error) and the others go on.
    """

    @staticmethod
    def _get_pre_execution_close_reason(error: GraphQLError) -> str | None:
        return None


class GraphQLApp(GraphQL[Context, None]):
    """strawberry's view whose context is :class:`workload_map.graphql.context.Context`.

    Beyond strawberry: ``application/graphql`` bodies (the query text; ``variables`` and
    ``operationName`` from the query string), and transport errors answered as JSON
    (:func:`transport_error`) instead of plain text, with a hint for a subscription sent
    as a plain POST. The GraphiQL page is :attr:`page`'s (local assets when fetched).
    """

    page: GraphiQLPage | None = None
    graphql_transport_ws_handler_class = OwnErrorsHandler

    @property
    def graphql_ide_html(self) -> str:
        """The GraphiQL page: :mod:`workload_map.api.graphiql`'s when set, else strawberry's (CDN assets)."""
        return self.page.html if self.page is not None else str(super().graphql_ide_html)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: websockets go to strawberry; HTTP transport errors are answered as JSON."""
        if scope["type"] != "http":
            if scope["type"] == "websocket" and runtime_of(WebSocket(scope, receive, send)).service is None:
                await _starting(scope, receive, send)
                return
            await super().__call__(scope, receive, send)
            return
        try:
            response = await self.run(Request(scope=scope, receive=receive))
        except StrawberryHTTPException as exc:
            reason = exc.reason
            if "subscriptions are not allowed" in reason and not reason.endswith(SUBSCRIPTION_HINT):
                reason += SUBSCRIPTION_HINT
            log.info("GraphQL request refused (%d): %s", exc.status_code, reason)
            response = transport_error(exc.status_code, reason)
        await response(scope, receive, send)

    async def parse_http_body(self, request: Any) -> GraphQLRequestData | list[GraphQLRequestData]:
        """Strawberry's parsing, plus ``application/graphql`` bodies; ``operationName`` checked.

        Such a body holds a query, never a mutation: :meth:`execute_operation` refuses those.

        Raises:
            StrawberryHTTPException: 400 when ``operationName`` is neither a string nor null
                (strawberry passes any JSON value on; a list was an ``INTERNAL`` error).
        """
        parsed = await self._parse_body(request)
        for data in parsed if isinstance(parsed, list) else [parsed]:
            name = data.operation_name
            if name is not None and not isinstance(name, str):
                raise StrawberryHTTPException(400, f"operationName must be a string or null, got "
                                                   f"{type(name).__name__}")
        return parsed

    async def _parse_body(self, request: Any) -> GraphQLRequestData | list[GraphQLRequestData]:
        if request.method == "POST" and media_type(request.headers) in ("application/json",
                                                                        "application/graphql+json"):
            body = await request.get_body()
            if len(body) <= OFF_LOOP_JSON_BYTES:
                return await super().parse_http_body(request)
            decoded = await asyncio.to_thread(self.parse_json, body)  # not on the event loop (issue 29 item 1)
            token = _DECODED.set((body, decoded))
            try:
                return await super().parse_http_body(request)  # its parse_json of this body returns `decoded`
            finally:
                _DECODED.reset(token)
        if request.method != "POST" or media_type(request.headers) != "application/graphql":
            return await super().parse_http_body(request)
        body = await request.get_body()
        try:
            query = body.decode("utf-8") if isinstance(body, bytes) else str(body)
        except UnicodeDecodeError:
            raise StrawberryHTTPException(400, "the GraphQL document is not UTF-8 text") from None
        params = request.query_params
        variables = self.parse_json(params["variables"]) if params.get("variables") else None
        if variables is not None and not isinstance(variables, dict):
            raise StrawberryHTTPException(400, "variables must be a JSON object")
        return GraphQLRequestData(query=query, variables=variables, operation_name=params.get("operationName"),
                                  extensions={"wmap.graphql_body": True})

    async def execute_operation(self, request: Any, request_adapter: Any, request_data: Any, context: Context,
                                root_value: Any, sub_response: Any) -> Any:
        """Run the operation; an ``application/graphql`` body may only hold queries.

        Raises:
            StrawberryHTTPException: 400 for a mutation in an ``application/graphql`` body.
        """
        if isinstance(request_data, GraphQLRequestData) and request_data.protocol == "http":
            _refuse_plain_subscription(request_data)
        if isinstance(request_data, GraphQLRequestData) and (request_data.extensions or {}).get("wmap.graphql_body"):
            request_data.extensions = None
            try:
                return await super().execute_operation(request, _QueriesOnly(request_adapter), request_data, context,
                                                       root_value, sub_response)
            except StrawberryHTTPException as exc:
                if "are not allowed" in exc.reason:
                    raise StrawberryHTTPException(400, "an application/graphql body may only hold a query; send "
                                                       "mutations and subscriptions as application/json") from None
                raise
        try:
            return await super().execute_operation(request, request_adapter, request_data, context, root_value,
                                                   sub_response)
        except GraphQLError as error:  # a stream (SSE, multipart) whose document does not parse
            raise StrawberryHTTPException(400, error.message) from None

    def parse_json(self, data: str | bytes) -> Any:
        """Decode a JSON request body (or ``variables``/``extensions`` parameter): an object.

        strawberry 0.341 assumes an object and fails with a 500 on ``"text"``, ``5`` or bytes
        that are not UTF-8 (found by ``tests/auth/test_fuzz.py``).

        Raises:
            HTTPException: 400 when the JSON is not an object (or a batch list).
        """
        held = _DECODED.get()
        if held is not None and held[0] is data:
            return held[1]  # decoded in a worker thread by parse_http_body
        try:
            value = super().parse_json(data)
        except (UnicodeDecodeError, RecursionError):
            raise HTTPException(400, "the GraphQL request is not readable JSON (not UTF-8, or nested too "
                                     "deeply)") from None
        if not isinstance(value, (dict, list)):
            raise HTTPException(400, f"the GraphQL request must be a JSON object, got {type(value).__name__}")
        return value

    async def execute_single(self, request: Any, request_adapter: Any, sub_response: Any, context: Context,
                             root_value: Any, request_data: GraphQLRequestData) -> ExecutionResult:
        """Execute one operation in the query thread; its answer is JSON-encoded there too.

        A mutation goes back to the server's loop for its execution (see module doc).

        Raises:
            StrawberryHTTPException: as strawberry's (no operation, operation type not allowed).
        """
        answers = runtime_of(request).answers
        key, current = _answer_key(answers, context, request_data)
        if key is not None:
            body = answers.get(key, current)
            if body is not None:
                kept = ExecutionResult(data=None, errors=None)
                setattr(kept, _ENCODED, _Encoded({}, body))
                return kept
        execute = super().execute_single
        args = (request, request_adapter, sub_response, context, root_value, request_data)
        server_loop = asyncio.get_running_loop()

        async def off_loop() -> ExecutionResult:
            if _is_mutation(request_data):
                result = await on_loop(server_loop, execute(*args))
            else:
                result = await execute(*args)
            data = await super(GraphQLApp, self).process_result(request, result)
            setattr(result, _ENCODED, _Encoded(data, self.encode_json(data)))
            return result

        stop = request.scope[STOP_KEY] = threading.Event()
        try:
            result = await QUERIES.run(off_loop())
        finally:
            stop.set()  # given up (504, client gone) or done: a synchronous stretch still running ends now
        encoded = getattr(result, _ENCODED, None)
        if key is not None and not result.errors and isinstance(encoded, _Encoded) \
                and reads_views_only(_operation_of(request_data)):
            answers.put(key, current, encoded.body)
        return result

    async def process_result(self, request: Any, result: ExecutionResult) -> Any:
        """The answer of ``result``: the one encoded in the query thread when there is one."""
        encoded = getattr(result, _ENCODED, None)
        if isinstance(encoded, _Encoded):
            return encoded
        return await super().process_result(request, result)

    def encode_json(self, data: object) -> str | bytes:
        """JSON text of an answer; one encoded in the query thread is not encoded again."""
        if isinstance(data, _Encoded):
            return data.body
        if isinstance(data, list) and data and all(isinstance(item, _Encoded) for item in data):
            return b"[" + b",".join(_as_bytes(item.body) for item in data) + b"]"  # a batch
        return super().encode_json(data)

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
                       is_ready=runtime.can_answer, guard=guard if isinstance(guard, Guard) else UNAUTHENTICATED,
                       request=request, response=response, writer=_writer(runtime), loop=asyncio.get_running_loop(),
                       extra={"registrars": runtime.registrars} if runtime.registrars else {})

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        """Authenticate a websocket from its ``connection_init`` payload.

        Skipped when its upgrade request already authenticated it.

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


def graphql_app(*, max_subscriptions: int = 16, allowed_origins: tuple[str, ...] = (), graphiql: bool = True,
                page: GraphiQLPage | None = None) -> GraphQLApp:
    """The ASGI app serving ``/graphql`` (HTTP and WebSocket).

    A websocket handshake from a page on another origin is refused (403) unless that origin
    is in ``allowed_origins``. ``graphiql=False``: a browser's ``GET /graphql`` (``Accept:
    text/html``) gets a JSON 404 instead of the page; ``page`` serves it with local assets.
    """
    app = GraphQLApp(schema, graphql_ide="graphiql" if graphiql else None, subscription_protocols=PROTOCOLS,
                     keep_alive=True, keep_alive_interval=15, max_subscriptions_per_connection=max_subscriptions,
                     allowed_origins=list(allowed_origins))
    app.page = page
    return app


OFF_LOOP_JSON_BYTES = 64 * 1024
"""JSON request bodies above this size are decoded in a worker thread (a 2 MiB one takes tens of ms)."""

_DECODED: ContextVar[tuple[object, Any] | None] = ContextVar("wmap_decoded_body", default=None)
"""(body, its decoded value) while strawberry parses a body decoded off the loop."""

_ENCODED = "wmap_encoded"
"""Attribute of an ``ExecutionResult`` holding its :class:`_Encoded` answer."""


class _Encoded(dict[str, Any]):
    """An answer (``data``/``errors``/``extensions``) with its JSON text, made in the query thread."""

    def __init__(self, data: Mapping[str, Any], body: str | bytes) -> None:
        super().__init__(data)
        self.body = body


def _as_bytes(body: str | bytes) -> bytes:
    return body.encode() if isinstance(body, str) else body


_parse = SafeParserCache(maxsize=CACHE_SIZE).cached_parse_document
"""The parse the schema's parser cache does (same cache: a document is parsed once)."""


def _operation_of(request_data: GraphQLRequestData) -> OperationDefinitionNode | None:
    """The operation a request runs, from the shared parse cache.

    None when the document does not parse or names no operation to run (the schema reports
    those itself).
    """
    query = request_data.query
    if not isinstance(query, str):
        return None
    try:
        return select_operation(_parse(query, max_tokens=MAX_TOKENS), request_data.operation_name)
    except (GraphQLError, QueryRefused):
        return None


def _is_mutation(request_data: GraphQLRequestData) -> bool:
    """True when the operation to run is a mutation; a document that does not parse is not."""
    query = request_data.query
    if not isinstance(query, str) or "mutation" not in query:
        return False
    operation = _operation_of(request_data)
    return operation is not None and operation.operation == OperationType.MUTATION


def _answer_key(answers: AnswerCache, context: Context,
                request_data: GraphQLRequestData) -> tuple[Key | None, Hashable]:
    """``(key, stamp)`` of this request in :mod:`workload_map.api.answers`.

    ``(None, None)`` when its answer is not kept: kept answers off, a stream, a guarded
    caller (what a caller may see is decided per caller), no document text. Otherwise the
    freshness read for the stamp is set on ``context`` (``Context.freshness``).
    """
    if answers.max_bytes <= 0 or request_data.protocol != "http" or not context.guard.is_open:
        return None, None
    key = request_key(request_data.query, request_data.operation_name, request_data.variables)
    if key is None:
        return None, None
    context.freshness = context.service.freshness()  # the answer's extensions.stale says what its stamp says
    return key, stamp(context.service, context.is_ready, context.freshness)


def _refuse_plain_subscription(request_data: GraphQLRequestData) -> None:
    """Refuse a subscription sent as a plain request (no SSE, no multipart).

    Strawberry would run it as a query and answer a confusing null error.

    Raises:
        StrawberryHTTPException: 400 with how to subscribe instead.
    """
    query = request_data.query
    if not isinstance(query, str) or "subscription" not in query:
        return
    try:
        document = parse(query, max_tokens=MAX_TOKENS)
        operation = select_operation(document, request_data.operation_name)
    except (GraphQLError, QueryRefused):
        return  # the schema reports it
    if operation is not None and operation.operation == OperationType.SUBSCRIPTION:
        raise StrawberryHTTPException(400, "subscriptions are not allowed when using POST without a stream"
                                           + SUBSCRIPTION_HINT)


class _QueriesOnly(AsyncHTTPRequestAdapter):
    """A request adapter that reports ``GET``, so strawberry allows queries only.

    An ``application/graphql`` body is for queries; mutations travel as JSON. Everything
    but the method is read from the wrapped adapter.
    """

    def __init__(self, adapter: AsyncHTTPRequestAdapter) -> None:
        self._adapter = adapter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)

    @property
    def method(self) -> HTTPMethod:
        return "GET"

    @property
    def query_params(self) -> Mapping[str, str | None]:
        return self._adapter.query_params

    @property
    def path_params(self) -> Mapping[str, Any]:
        return self._adapter.path_params

    @property
    def headers(self) -> Mapping[str, str]:
        return self._adapter.headers

    @property
    def content_type(self) -> str | None:
        return self._adapter.content_type

    async def get_body(self) -> bytes:
        return await self._adapter.get_body()

    async def get_form_data(self) -> FormData:
        return await self._adapter.get_form_data()

    @property
    def url(self) -> str:
        return self._adapter.url

    @property
    def cookies(self) -> Mapping[str, str]:
        return self._adapter.cookies

    @property
    def client_host(self) -> str | None:
        return self._adapter.client_host


WS_TRY_AGAIN = 1013
"""WebSocket close code "Try Again Later" (RFC 6455 section 7.4.1, IANA registry)."""


async def _starting(scope: Scope, receive: Receive, send: Send) -> None:
    """Accept a WebSocket opened before start-up attached a service, and close it with 1013 at once.

    ``get_context`` raising ``CacheNotReady`` for a WebSocket made starlette answer with an HTTP
    response, which uvicorn refuses on a WebSocket (an ASGI error in the log, the client cut off).
    """
    if (await receive())["type"] == "websocket.connect":
        asked = [p for p in scope.get("subprotocols", ()) if p in ("graphql-transport-ws", "graphql-ws")]
        await send({"type": "websocket.accept", "subprotocol": asked[0] if asked else None})
        await send({"type": "websocket.close", "code": WS_TRY_AGAIN, "reason": "the server is starting; retry shortly"})


def _writer(runtime: Any) -> Any:
    """The workload writer, or None while writes are not available."""
    try:
        return runtime.require_writer()
    except CacheNotReady:
        return None
