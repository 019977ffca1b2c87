"""Load shedding: a bounded number of expensive requests at once, the rest refused early.

Expensive requests are GraphQL operations over HTTP (not GraphiQL, not streams) and
workload lists (``/api/v1/workloads``, ``/api/v1/namespaces/{namespace}/workloads``).
At most ``slots`` of them run at once; up to ``queue`` more wait for a slot at most
``wait_s`` seconds; beyond that, or after the wait, the answer is 503 ``overloaded``
with ``Retry-After`` (RFC 9110 section 10.2.3). Health (``/livez``, ``/readyz``),
metrics and single-workload reads never take a slot, so they never queue behind queries.

The request body is read BEFORE a slot is taken (the body limit and read timeout of
``BodyLimitMiddleware`` apply), so clients trickling bodies cannot hold the slots; the
handler gets the buffered body.

Streams (SSE or multipart subscriptions, ``Accept: text/event-stream`` or
``multipart/mixed``) are not counted: they are bounded per connection by
``max_subscriptions`` and would otherwise hold a slot for their whole life.

Pacing (:class:`AdmissionMiddleware`, outermost): uvicorn creates a task for every request
as it arrives, and asyncio runs every ready task once per loop turn in arrival order, so
200 requests arriving together are 200 middleware passes (about 1 ms each, the 503s of the
load shedding included) in one turn, ahead of a ``/livez`` that arrives just after. The
admission lets at most ``per_turn`` requests per loop turn go on into the app, in arrival
order; the others wait their turn. Health requests never wait: each turn holds a bounded
amount of request work, and a probe is answered within a turn or two.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workload_map.api.errors import Overloaded, response_for
from workload_map.errors import ServerError

log = logging.getLogger(__name__)

EXPENSIVE_PATHS = re.compile(r"/graphql/?|/api/v1/workloads/?|/api/v1/namespaces/[^/]+/workloads/?|/api/v1/studio/evaluate")
STREAM_TYPES = ("text/event-stream", "multipart/mixed")
HEALTH_PATHS = frozenset({"/livez", "/readyz", "/healthz"})


def is_expensive(scope: Scope) -> bool:
    """True for the requests that take a slot (see module doc)."""
    if scope["type"] != "http" or not EXPENSIVE_PATHS.fullmatch(scope.get("path", "")):
        return False
    accept = Headers(scope=scope).get("accept", "")
    if any(t in accept for t in STREAM_TYPES):
        return False
    return not (scope.get("method") == "GET" and "text/html" in accept)  # GraphiQL page


class LoadSheddingMiddleware:
    """At most ``slots`` expensive requests at once, ``queue`` waiting up to ``wait_s``.

    Args:
        app: the wrapped ASGI app.
        slots: expensive requests running at once (>= 1).
        queue: requests allowed to wait for a slot (0: refuse at once when full).
        wait_s: longest wait for a slot, seconds.
        retry_after_s: the ``Retry-After`` of a refusal, whole seconds.
    """

    def __init__(self, app: ASGIApp, slots: int, queue: int, wait_s: float = 5.0, retry_after_s: int = 1) -> None:
        self.app = app
        self.slots = max(1, slots)
        self.queue = max(0, queue)
        self.wait_s = wait_s
        self.retry_after_s = retry_after_s
        self._semaphore = asyncio.Semaphore(self.slots)
        self.waiting = 0
        self.refused = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry: run an expensive request in a slot, or answer 503 with ``Retry-After``."""
        if not is_expensive(scope):
            await self.app(scope, receive, send)
            return
        try:
            receive = await _buffered(receive)
        except ServerError as exc:  # body too large or too slow (BodyLimitMiddleware)
            await response_for(exc)(scope, receive, send)
            return
        if not await self._acquire():
            self.refused += 1
            log.info("refused %s %s: %d expensive requests running and %d waiting", scope.get("method"),
                     scope.get("path"), self.slots, self.waiting)
            busy = Overloaded(f"the server is busy ({self.slots} expensive requests running, {self.waiting} "
                              f"waiting); retry in {self.retry_after_s}s")
            response = response_for(busy)
            response.headers["Retry-After"] = str(self.retry_after_s)
            await response(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self._semaphore.release()

    async def _acquire(self) -> bool:
        """Take a slot now, or wait in the queue; False when the queue is full or the wait ends."""
        if not self._semaphore.locked():
            await self._semaphore.acquire()
            return True
        if self.waiting >= self.queue:
            return False
        self.waiting += 1
        try:
            async with asyncio.timeout(self.wait_s):
                await self._semaphore.acquire()
            return True
        except TimeoutError:
            return False
        finally:
            self.waiting -= 1


async def _buffered(receive: Receive) -> Receive:
    """Read the whole request body now; return a ``receive`` that replays it.

    After the replay, the returned ``receive`` waits on the real one (for
    ``http.disconnect``).
    """
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break

    async def replay() -> Message:
        if messages:
            return messages.pop(0)
        return await receive()

    return replay


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
