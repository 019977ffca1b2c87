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

Pacing is ``workload_map.api.admission``.
"""

from __future__ import annotations

import asyncio
import re

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workload_map.api.errors import Overloaded, is_graphql, response_for
from workload_map.errors import ServerError
from workload_map.logs import logger

log = logger(__name__)

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
            await response_for(exc, graphql=is_graphql(scope))(scope, receive, send)
            return
        if not await self._acquire():
            self.refused += 1
            log.info("refused %s %s: %d expensive requests running and %d waiting", scope.get("method"),
                     scope.get("path"), self.slots, self.waiting)
            busy = Overloaded(f"the server is busy ({self.slots} expensive requests running, {self.waiting} "
                              f"waiting); retry in {self.retry_after_s}s")
            response = response_for(busy, graphql=is_graphql(scope))
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
