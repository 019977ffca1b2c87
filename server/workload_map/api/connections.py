"""Connection guards for uvicorn's h11 protocol: a connection cap and a header timeout.

uvicorn (0.54) bounds the time between requests on a kept-alive connection
(``timeout_keep_alive``) but not the time a client takes to send a request's headers: a
client trickling one header byte a second keeps its connection, and with a few hundred
such clients the server runs out of file descriptors ("slowloris"). This protocol:

* closes a connection whose request headers are not complete ``header_timeout_s`` after
  its first byte (or after the connection opened), answering 408 in our JSON error shape;
* answers 503 (JSON, ``Retry-After``) and closes a connection that would exceed
  ``max_connections`` open connections, before reading anything from it.

Request bodies are bounded by ``workload_map.api.body_limit.BodyLimitMiddleware``
(``body_timeout_s``). Use with ``uvicorn.Config(http=guarded_protocol(...))``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)


def raw_response(status: int, reason: str, code: str, message: str, headers: dict[str, str] | None = None) -> bytes:
    """A complete HTTP/1.1 response with our JSON error body, closing the connection."""
    body = json.dumps({"error": code, "message": message, "details": []}).encode()
    lines = [f"HTTP/1.1 {status} {reason}", "content-type: application/json", f"content-length: {len(body)}",
             "connection: close", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class GuardedH11Protocol(H11Protocol):
    """Uvicorn's h11 protocol with a header timeout and a connection cap.

    Both are class attributes, set by :func:`guarded_protocol`.
    """

    header_timeout_s: float = 10.0
    max_connections: int = 1000
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Register the connection; refuse it when over the cap, else start the header clock."""
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            log.info("refused a connection: %d open, the limit is %d", len(self.connections) - 1,
                     self.max_connections)
            transport.write(raw_response(503, "Service Unavailable", "too_many_connections",
                                         f"the server holds its limit of {self.max_connections} connections; retry "
                                         "shortly", {"retry-after": "1"}))
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Feed h11; the header clock runs while no request is in progress."""
        if self._between_requests() and self._header_timer is None:
            self._arm()
        super().data_received(data)
        if not self._between_requests():
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the header clock and let uvicorn clean up."""
        self._disarm()
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        cycle: Any = self.cycle
        return cycle is None or bool(cycle.response_complete)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self._between_requests() or self.transport.is_closing():
            return
        log.info("closed a connection from %s: request headers not complete within %gs", self.client,
                 self.header_timeout_s)
        self.transport.write(raw_response(408, "Request Timeout", "timeout", "the request headers did not arrive "
                                          f"within {self.header_timeout_s:g}s"))
        self.transport.close()


def guarded_protocol(*, header_timeout_s: float, max_connections: int) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` subclass with these limits (uvicorn takes a class)."""
    return type("ConfiguredH11Protocol", (GuardedH11Protocol,),
                {"header_timeout_s": header_timeout_s, "max_connections": max_connections})
