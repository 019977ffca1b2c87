"""Pure-ASGI middleware: request body limit (JSON 413), per-request time budget (JSON 504),
request latency metrics and the stale-data header."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from starlette.requests import HTTPConnection
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.api.errors import DeadlineExceeded, PayloadTooLarge, error_response, response_for
from server.kube.freshness import freshness

log = logging.getLogger(__name__)

DEADLINE_KEY = "wmap.deadline"


class BodyLimitMiddleware:
    """Reject request bodies above ``max_bytes``.

    At once from ``Content-Length``, else while reading (``PayloadTooLarge`` raised into the
    handler becomes the JSON 413).
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point (the ASGI specification's application call)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await error_response(413, PayloadTooLarge.code, self._message())(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise PayloadTooLarge(self._message())
            return message

        await self.app(scope, limited, send)

    def _message(self) -> str:
        return f"request body exceeds the limit of {self.max_bytes} bytes"


class MetricsMiddleware:
    """Observe every HTTP request's latency, labelled with the route template."""

    def __init__(self, app: ASGIApp, metrics: Any, routes: list[Any]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    def _route(self, scope: Scope) -> str:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return str(getattr(route, "path", "other"))
        return "unmatched"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point (the ASGI specification's application call)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording)
        finally:
            self.metrics.observe_request(scope.get("method", ""), self._route(scope), status,
                                         time.perf_counter() - started)


class DeadlineMiddleware:
    """Give every HTTP request ``seconds`` until its response starts.

    Then the handler is cancelled and the answer is a JSON 504 ``deadline_exceeded``.

    Once the response has started (streams: SSE subscriptions, multipart) the budget no
    longer applies. A handler that legitimately waits longer (``?wait=`` on the phase
    endpoint) moves its own deadline with :func:`extend_deadline`. Work that never yields to
    the event loop cannot be interrupted; that is bounded elsewhere (page size, jq caps).
    """

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point (the ASGI specification's application call)."""
        if scope["type"] != "http" or self.seconds <= 0:
            await self.app(scope, receive, send)
            return
        started = False
        budget = asyncio.timeout(self.seconds)

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                budget.reschedule(None)
            await send(message)

        scope[DEADLINE_KEY] = budget
        try:
            async with budget:
                await self.app(scope, receive, sending)
        except TimeoutError:
            if not budget.expired():
                raise
            log.warning("%s %s exceeded its time budget of %gs", scope.get("method"), scope.get("path"),
                        self.seconds)
            if not started:
                exc = DeadlineExceeded(f"the request did not finish within {self.seconds:g}s")
                await response_for(exc)(scope, receive, send)


def extend_deadline(conn: HTTPConnection, seconds: float) -> None:
    """Let this request run ``seconds`` from now (no-op without a :class:`DeadlineMiddleware`)."""
    budget = conn.scope.get(DEADLINE_KEY)
    if isinstance(budget, asyncio.Timeout):
        budget.reschedule(asyncio.get_running_loop().time() + seconds)


STALE_HEADER = b"x-wmap-stale"
STALE_SINCE_HEADER = b"x-wmap-stale-since"


class StaleHeaderMiddleware:
    """Mark every HTTP answer with ``X-Wmap-Stale: true|false`` (and, while stale,
    ``X-Wmap-Stale-Since``: RFC 3339 start of the outage), from ``server.kube.freshness``.

    A header and not a body field, so every JSON shape stays as documented; GraphQL
    answers also carry ``extensions.stale``.
    """

    def __init__(self, app: ASGIApp, runtime: Any) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def marking(message: Message) -> None:
            if message["type"] == "http.response.start":
                summary = freshness(self.runtime.states())
                headers = list(message.get("headers") or [])
                headers.append((STALE_HEADER, b"true" if summary.stale else b"false"))
                if summary.stale and summary.since_iso:
                    headers.append((STALE_SINCE_HEADER, summary.since_iso.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, marking)
