"""Pure-ASGI middleware for request limits, latency metrics and the stale-data header.

Request body limit (JSON 413) and body read timeout (JSON 408), per-request time budget
(JSON 504), request latency metrics and the stale-data header.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from starlette.requests import HTTPConnection
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workload_map.api.errors import (BodyTimeout, DeadlineExceeded, PayloadTooLarge, error_response, is_graphql,
                                     response_for)

log = logging.getLogger(__name__)

DEADLINE_KEY = "wmap.deadline"


class BodyLimitMiddleware:
    """Reject request bodies above ``max_bytes``.

    At once from ``Content-Length``, else while reading (``PayloadTooLarge`` raised into the
    handler becomes the JSON 413).

    A body that is not complete ``timeout_s`` after the handler first asks for it (a
    client trickling bytes) ends the request with a JSON 408 (``BodyTimeout``); once the
    body is complete, later ``receive`` calls (streams waiting for a disconnect) are not
    timed.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout_s: float = 0.0) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point (the ASGI specification's application call)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await error_response(413, PayloadTooLarge.code, self._message(), graphql=is_graphql(scope))(
                scope, receive, send)
            return
        seen, done, deadline = 0, False, 0.0

        async def limited() -> Message:
            nonlocal seen, done, deadline
            if done or self.timeout_s <= 0:
                message = await receive()
            else:
                deadline = deadline or asyncio.get_running_loop().time() + self.timeout_s
                message = await _receive_until(receive, deadline, self.timeout_s)
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                done = not message.get("more_body", False)
                if seen > self.max_bytes:
                    raise PayloadTooLarge(self._message())
            return message

        await self.app(scope, limited, send)

    def _message(self) -> str:
        return f"request body exceeds the limit of {self.max_bytes} bytes"


async def _receive_until(receive: Receive, deadline: float, timeout_s: float) -> Message:
    """``receive()`` unless it is still pending at ``deadline`` (loop time).

    When the event loop was busy past the deadline, bytes that arrived meanwhile are
    delivered in the same loop turn as the timer: the few extra turns given here let them
    win, so only a client that really sent nothing is cut off.

    Raises:
        BodyTimeout: nothing arrived by the deadline.
    """
    task = asyncio.ensure_future(receive())
    await asyncio.wait({task}, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
    for _ in range(3):
        if task.done():
            break
        await asyncio.sleep(0)
    if not task.done():
        task.cancel()
        raise BodyTimeout(f"the request body did not arrive within {timeout_s:g}s")
    return task.result()


HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"})
"""RFC 9110 section 9 methods; any other method is labelled ``other``."""


def method_label(method: str) -> str:
    """The ``method`` label: an RFC 9110 method, else ``other`` (bounded series)."""
    return method if method in HTTP_METHODS else "other"


class MetricsMiddleware:
    """Observe every HTTP request's latency, labelled with route, method and status.

    The labels are the route template (``unmatched`` for no route), the method
    (:func:`method_label`) and the status: every label takes a bounded set of values
    whatever clients send.
    """

    def __init__(self, app: ASGIApp, metrics: Any, routes: list[Any]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    def _route(self, scope: Scope) -> str:
        partial = None
        for route in self.routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return str(getattr(route, "path", "other"))
            if match == Match.PARTIAL and partial is None:  # the path matched, the method did not
                partial = str(getattr(route, "path", "other"))
        return partial or "unmatched"

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
            self.metrics.observe_request(method_label(str(scope.get("method", ""))), self._route(scope), status,
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
                await response_for(exc, graphql=is_graphql(scope))(scope, receive, send)


def extend_deadline(conn: HTTPConnection, seconds: float) -> None:
    """Let this request run ``seconds`` from now (no-op without a :class:`DeadlineMiddleware`)."""
    budget = conn.scope.get(DEADLINE_KEY)
    if isinstance(budget, asyncio.Timeout):
        budget.reschedule(asyncio.get_running_loop().time() + seconds)


STALE_HEADER = b"x-wmap-stale"
STALE_SINCE_HEADER = b"x-wmap-stale-since"


class StaleHeaderMiddleware:
    """Mark every HTTP answer with ``X-Wmap-Stale: true|false``, from ``workload_map.kube.freshness``.

    While stale, ``X-Wmap-Stale-Since`` also gives the RFC 3339 start of the outage.

    A header and not a body field, so every JSON shape stays as documented; GraphQL
    answers also carry ``extensions.stale``.
    """

    def __init__(self, app: ASGIApp, runtime: Any) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: add the staleness headers to the response start of every HTTP request."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def marking(message: Message) -> None:
            if message["type"] == "http.response.start":
                summary = self.runtime.freshness()
                headers = list(message.get("headers") or [])
                headers.append((STALE_HEADER, b"true" if summary.stale else b"false"))
                if summary.stale and summary.since_iso:
                    headers.append((STALE_SINCE_HEADER, summary.since_iso.encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, marking)
