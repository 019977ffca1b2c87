"""Domain errors -> HTTP: one table of status codes and one JSON error shape.

Body: ``{"error": <stable code>, "message": <text>, "details": [...]}``; ``details``
holds every validation problem (``{path, message}``) for 422, and is otherwise empty or
small context. Unexpected exceptions become a 500 ``internal`` body without the
exception text (starlette's server-error middleware logs the traceback once).

A refusal of a ``/graphql`` request before GraphQL runs (no credentials, cross-site write,
body too large or too slow, busy, time budget) carries GraphQL's shape too: ``errors[0]``
with ``extensions.code`` from the documented set (docs/api.md; :data:`GRAPHQL_CODES` by
status) and ``extensions.error`` the stable code above, so GraphQL clients read it as they
read an error of the schema (``workload_map.graphql.errors``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from workload_map.errors import (
    DefinitionsTooLarge,
    TooManyDefinitions,
    CacheNotReady,
    Conflict,
    DefinitionError,
    DefinitionNotFound,
    Forbidden,
    InvalidDefinition,
    InvalidRequest,
    ServerError,
    ServerStopping,
    Unauthorized,
    WorkloadNotFound,
)
from workload_map.kube.reviews import ReviewUnavailable
from workload_map.definitions.stored import StoreError

from workload_map.api.waits import TooManyWaits
from workload_map.logs import logger

log = logger(__name__)


class WaitTimeout(ServerError):
    """A ``?wait=`` request reached its timeout before the phase was reached (408)."""

    code = "timeout"

    def __init__(self, message: str, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.details = details or []


class PayloadTooLarge(ServerError):
    """The request body exceeds ``settings.http.max_body_bytes`` (413)."""

    code = "payload_too_large"


class BodyTimeout(ServerError):
    """The request body did not arrive within ``settings.http.body_timeout_s`` (408)."""

    code = "body_timeout"


class Overloaded(ServerError):
    """Every slot for expensive requests is taken and the queue is full (503, Retry-After)."""

    code = "overloaded"


class DeadlineExceeded(ServerError):
    """The request did not finish within ``settings.http.request_timeout_s`` (504)."""

    code = "deadline_exceeded"


STATUS: tuple[tuple[type[ServerError], int], ...] = (
    (InvalidDefinition, 422),
    (InvalidRequest, 400),
    (DefinitionNotFound, 404),
    (WorkloadNotFound, 404),
    (Conflict, 409),
    (CacheNotReady, 503),
    (ServerStopping, 503),
    (StoreError, 503),
    (ReviewUnavailable, 503),
    (DeadlineExceeded, 504),
    (Forbidden, 403),
    (Unauthorized, 401),
    (WaitTimeout, 408),
    (BodyTimeout, 408),
    (Overloaded, 503),
    (PayloadTooLarge, 413),
    (DefinitionError, 422),
    (TooManyWaits, 429),
    (TooManyDefinitions, 429),
    (DefinitionsTooLarge, 413),
)
"""Most specific first; the first matching class decides the status."""

HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
              405: "method_not_allowed", 408: "timeout", 409: "conflict", 413: "payload_too_large",
              415: "unsupported_media_type", 422: "invalid_definition", 429: "too_many_requests", 503: "not_ready",
              504: "deadline_exceeded"}


GRAPHQL_CODES = {400: "BAD_REQUEST", 401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND",
                 405: "BAD_REQUEST", 408: "TIMEOUT", 409: "CONFLICT", 413: "BAD_REQUEST", 415: "BAD_REQUEST",
                 422: "BAD_USER_INPUT", 503: "UNAVAILABLE", 504: "TIMEOUT"}
"""HTTP status of a refused ``/graphql`` request -> its GraphQL ``extensions.code`` (else ``INTERNAL``)."""


def is_graphql(scope: Mapping[str, Any]) -> bool:
    """True for a request to the GraphQL endpoint (``/graphql``)."""
    return str(scope.get("path", "")).rstrip("/") == "/graphql"


def error_response(status: int, code: str, message: str, details: Sequence[Any] = (),
                   headers: dict[str, str] | None = None, *, graphql: bool = False) -> JSONResponse:
    """The JSON error response; ``graphql``: with GraphQL's ``errors`` list too (module docstring)."""
    body: dict[str, Any] = {"error": code, "message": message, "details": list(details)}
    if graphql:
        extensions = {"code": GRAPHQL_CODES.get(status, "INTERNAL"), "error": code}
        body["errors"] = [{"message": message, "extensions": extensions}]
    return JSONResponse(body, status_code=status, headers=headers)


def status_of(exc: ServerError) -> int:
    """HTTP status for a domain error (500 when unmapped)."""
    return next((status for cls, status in STATUS if isinstance(exc, cls)), 500)


def details_of(exc: ServerError) -> list[Any]:
    """The ``details`` list of a domain error."""
    if isinstance(exc, InvalidDefinition):
        return [p.to_dict() for p in exc.problems]
    return list(getattr(exc, "details", []) or [])


def response_for(exc: ServerError, *, graphql: bool = False) -> JSONResponse:
    """The JSON error response for a domain error (``graphql``: see :func:`error_response`)."""
    status = status_of(exc)
    headers = {"Retry-After": "5"} if status in (429, 503) else None
    if status == 401:
        headers = {"WWW-Authenticate": 'Bearer realm="workload-map-server"'}
    return error_response(status, exc.code, str(exc), details_of(exc), headers, graphql=graphql)


async def handle_server_error(request: Request, exc: Exception) -> Response:
    """Exception handler for :class:`ServerError`."""
    assert isinstance(exc, ServerError)
    return response_for(exc, graphql=is_graphql(request.scope))


async def handle_http_exception(request: Request, exc: Exception) -> Response:
    """Exception handler for starlette's ``HTTPException`` (404 route, 405 method, ...)."""
    assert isinstance(exc, HTTPException)
    code = HTTP_CODES.get(exc.status_code, "error")
    return error_response(exc.status_code, code, str(exc.detail), headers=dict(exc.headers or {}),
                          graphql=is_graphql(request.scope))


async def handle_disconnect(request: Request, exc: Exception) -> Response:
    """A client that went away before its request was read: one INFO line, no traceback.

    Nobody reads the answer (a 400 ``client_disconnected``, for the access log).
    """
    log.info("client %s went away during %s %s", request.client.host if request.client else "?", request.method,
             request.url.path)
    return error_response(400, "client_disconnected", "the client went away before the request was read")


async def handle_unexpected(request: Request, exc: Exception) -> Response:
    """500 without internals (the traceback is logged by the server-error middleware)."""
    return error_response(500, "internal", "internal error; see the server log")


EXCEPTION_HANDLERS: dict[Any, Any] = {
    ServerError: handle_server_error,
    HTTPException: handle_http_exception,
    ClientDisconnect: handle_disconnect,
    Exception: handle_unexpected,
}
