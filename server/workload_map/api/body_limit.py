"""Request body limit (JSON 413) and body read timeout (JSON 408), pure ASGI."""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workload_map.api.errors import BodyTimeout, PayloadTooLarge, error_response, is_graphql


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
