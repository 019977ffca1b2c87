"""Admission: at most ``per_turn`` requests per event-loop turn go on into the app, pure ASGI.

Outermost middleware. uvicorn creates a task for every request
as it arrives, and asyncio runs every ready task once per loop turn in arrival order, so
200 requests arriving together are 200 middleware passes (about 1 ms each, the 503s of the
load shedding included) in one turn, ahead of a ``/livez`` that arrives just after. The
admission lets at most ``per_turn`` requests per loop turn go on into the app, in arrival
order; the others wait their turn. Health requests never wait: each turn holds a bounded
amount of request work, and a probe is answered within a turn or two.
"""

from __future__ import annotations

import asyncio
from collections import deque

from starlette.types import ASGIApp, Receive, Scope, Send

from workload_map.api.shedding import HEALTH_PATHS


class AdmissionMiddleware:
    """Let at most ``per_turn`` HTTP requests per event-loop turn into the app; health at once.

    See the module docstring. Requests keep their arrival order; websockets and lifespan
    events pass through.

    Args:
        app: the wrapped ASGI app.
        per_turn: requests started per loop turn (>= 1).
    """

    def __init__(self, app: ASGIApp, per_turn: int = 4) -> None:
        self.app = app
        self.per_turn = max(1, per_turn)
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._started = 0
        self._turn_scheduled = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: health and requests within this turn's allowance go on; others wait."""
        if scope["type"] == "http" and scope.get("path") not in HEALTH_PATHS:
            await self._admit()
        await self.app(scope, receive, send)

    async def _admit(self) -> None:
        """Return in this turn when its allowance is not used up, else in a later turn (FIFO)."""
        loop = asyncio.get_running_loop()
        self._schedule(loop)
        if not self._waiting and self._started < self.per_turn:
            self._started += 1
            return
        turn = loop.create_future()
        self._waiting.append(turn)
        await turn

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._turn_scheduled:
            self._turn_scheduled = True
            loop.call_soon(self._next_turn, loop)

    def _next_turn(self, loop: asyncio.AbstractEventLoop) -> None:
        """A new loop turn: a fresh allowance, spent on the oldest waiting requests first."""
        self._turn_scheduled = False
        self._started = 0
        while self._waiting and self._started < self.per_turn:
            turn = self._waiting.popleft()
            if not turn.done():  # a cancelled request (shutdown) gives its place up
                turn.set_result(None)
                self._started += 1
        if self._waiting or self._started:
            self._schedule(loop)
