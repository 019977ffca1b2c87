"""The stale-data headers on every HTTP answer, pure ASGI."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send


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
