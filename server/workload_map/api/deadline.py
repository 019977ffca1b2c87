"""The per-request time budget (JSON 504), pure ASGI, and how a handler extends it."""

from __future__ import annotations

import asyncio

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workload_map.api.errors import DeadlineExceeded, is_graphql, response_for
from workload_map.logs import logger

log = logger(__name__)

DEADLINE_KEY = "wmap.deadline"


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
