"""Request latency metrics per route template and method, pure ASGI."""

from __future__ import annotations

import time
from typing import Any

from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send


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
