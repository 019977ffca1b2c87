"""How ``wmap serve`` runs uvicorn: start-up failures in one line, a stop that drains, two listeners.

Starlette reports an exception of the application's lifespan start-up to the ASGI server
as ``lifespan.startup.failed`` carrying the formatted traceback, which uvicorn logs
(ASGI lifespan spec: https://asgi.readthedocs.io/en/latest/specs/lifespan.html). The
wrapper keeps the exception's one-line text for the CLI and sends the message empty, so
uvicorn logs only "Application startup failed". :func:`drained_first` ends the requests
that wait on the change feed as the stop begins; :func:`run_with_webhook` runs the API and
the admission webhook listener together.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]
Receive = Callable[[], Awaitable[Message]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


class StartupFailure:
    """An ASGI wrapper recording why the wrapped application's start-up failed.

    Attributes:
        error: ``"ExceptionType: message"`` of the start-up failure ("" while none).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.error = ""

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        """Pass every scope through; rewrite ``lifespan.startup.failed``."""
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def quiet_send(message: Message) -> None:
            if message.get("type") == "lifespan.startup.failed":
                exc = sys.exc_info()[1]  # sent from inside the application's except block
                if exc is not None:  # the whole message on one line (a YAML error spans several)
                    self.error = " ".join(f"{type(exc).__name__}: {exc}".split())
                else:  # a formatted traceback: its last line is the exception
                    text = str(message.get("message", "")).strip()
                    self.error = text.splitlines()[-1] if text else "start-up failed"
                message = {**message, "message": ""}
            await send(message)

        await self.app(scope, receive, quiet_send)


def drained_first(server: Any, drain: Callable[[], Awaitable[None]]) -> Any:
    """``server`` (a ``uvicorn.Server``), calling ``drain()`` as its shutdown begins.

    uvicorn's shutdown closes the listeners, waits up to ``timeout_graceful_shutdown`` (5 s)
    for the open requests and then cancels those still running: a ``?wait=`` held on the
    change feed answered 500 with a traceback in the log, and the stop took the whole 5 s.
    ``drain`` (``Runtime.drain``: the change feed's end, and a wait of at most 2 s for what
    held it) answers them first (503 with ``Retry-After``; a subscription over SSE or a
    WebSocket completes), so the stop takes as long as their answers. A failing ``drain`` is
    logged and the shutdown goes on. Returns ``server``.
    """
    original = server.shutdown

    async def shutdown(sockets: Any = None) -> None:
        try:
            await drain()
        except Exception:  # noqa: BLE001 - nothing may keep the server from stopping
            import logging

            logging.getLogger(__name__).exception("ending the requests held on the change feed failed")
        await original(sockets=sockets)

    server.shutdown = shutdown
    return server


def run_with_webhook(server: Any, webhook: Any) -> None:
    """Run two ``uvicorn.Server`` objects in one event loop until either is asked to exit.

    uvicorn installs its signal handlers per server (the one installed last wins), so each
    server's ``handle_exit`` is wrapped to flag both: SIGTERM stops the API and the webhook
    listener together. When the webhook listener cannot start (port taken, bad certificate)
    the API server is stopped too.
    """
    import asyncio

    for one, other in ((server, webhook), (webhook, server)):
        original = one.handle_exit

        def handle_exit(sig: int, frame: Any, original: Any = original, other: Any = other) -> None:
            original(sig, frame)
            other.should_exit = True

        one.handle_exit = handle_exit

    async def both() -> None:
        hook = asyncio.create_task(_serve_then_stop(webhook, server))
        try:
            await server.serve()
        finally:
            webhook.should_exit = True
            await asyncio.gather(hook, return_exceptions=True)

    asyncio.run(both())


async def _serve_then_stop(one: Any, other: Any) -> None:
    try:
        await one.serve()
    except (SystemExit, OSError):
        pass
    finally:
        other.should_exit = True
