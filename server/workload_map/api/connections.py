"""Connection guards for uvicorn's h11 protocol: a connection cap and a header timeout.

uvicorn (0.54) bounds the time between requests on a kept-alive connection
(``timeout_keep_alive``) but not the time a client takes to send a request's headers: a
client trickling one header byte a second keeps its connection, and with a few hundred
such clients the server runs out of file descriptors ("slowloris"). This protocol:

* closes a connection whose request headers are not complete ``header_timeout_s`` after
  its first byte (or after the connection opened), answering 408 in our JSON error shape;
* answers 503 (JSON, ``Retry-After``) and closes a connection that would exceed
  ``max_connections`` open connections, except that :data:`PROBE_SLOTS` connections above
  the cap are held for probes: such a connection is served only when its request line is
  ``GET`` (or ``HEAD``) of ``/livez``, ``/readyz`` or ``/healthz`` (503 otherwise) and must
  send it within :data:`PROBE_HEADER_TIMEOUT_S`. A client holding every ordinary
  connection (long polls, slow bodies) therefore never fails kubelet's probes, which open
  one connection per probe on the same port (issue 29 item 2). A probe slot serves exactly
  one request: its response carries ``connection: close`` and the connection closes after
  it, so no later request on it is served (h11 starts no second cycle on a connection
  whose response said close) and the slot is free again at once, not after the keep-alive
  time.

Request bodies are bounded by ``workload_map.api.body_limit.BodyLimitMiddleware``
(``body_timeout_s``). Use with ``uvicorn.Config(http=guarded_protocol(...))``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from workload_map.logs import logger

log = logger(__name__)

PROBE_SLOTS = 16
"""Connections above ``max_connections`` that are served for a probe request only."""

PROBE_HEADER_TIMEOUT_S = 2.0
"""Seconds a connection in a probe slot has to send its request headers."""

CLOSE_HEADER = (b"connection", b"close")
"""The response header that ends a connection after its response (h11 then closes it)."""

PROBE_LINES = tuple(f"{method} {path}".encode() for method in ("GET", "HEAD")
                    for path in ("/livez", "/readyz", "/healthz"))
"""Request-line prefixes a probe slot serves (the query string and version may follow)."""


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
    _probe_only: bytes | None = None
    """Bytes read so far on a connection in a probe slot, until its request line is read."""
    _probe_slot = False
    """True on a connection admitted through a probe slot: it is served for one request."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Register the connection; refuse it when over the cap (probe slots aside), else start the header clock."""
        super().connection_made(transport)
        open_now = len(self.connections)
        if open_now > self.max_connections + PROBE_SLOTS:
            log.info("refused a connection: %d open, the limit is %d", open_now - 1, self.max_connections)
            self._refuse()
            return
        if open_now > self.max_connections:
            self._probe_slot, self._probe_only = True, b""
            self._arm(PROBE_HEADER_TIMEOUT_S)
            return
        self._arm()

    def _refuse(self) -> None:
        self.transport.write(raw_response(503, "Service Unavailable", "too_many_connections",
                                          f"the server holds its limit of {self.max_connections} connections; retry "
                                          "shortly", {"retry-after": "1"}))
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        """Feed h11; the header clock runs while no request is in progress.

        A connection in a probe slot is held back until its request line shows a probe, and
        its one request is answered with ``connection: close``.
        """
        if self._probe_only is not None:
            data = self._probe_only + data
            if b"\n" not in data[:256]:
                if len(data) >= 256:
                    self._refuse()
                else:
                    self._probe_only = data
                return
            if not data.startswith(PROBE_LINES):
                log.info("refused a connection over the limit of %d: not a probe", self.max_connections)
                self._refuse()
                return
            self._probe_only = None
        if self._between_requests() and self._header_timer is None:
            self._arm()
        super().data_received(data)
        if self._probe_slot and self.cycle is not None:
            self._close_after_response(self.cycle)
        if not self._between_requests():
            self._disarm()

    @staticmethod
    def _close_after_response(cycle: Any) -> None:
        """Make the one response of ``cycle`` say ``connection: close``; uvicorn closes the connection after it.

        ``cycle`` is uvicorn's RequestResponseCycle, not yet started (its task runs on a later
        loop turn), so its response headers are still to be built from ``default_headers``.
        """
        if CLOSE_HEADER not in cycle.default_headers:
            cycle.default_headers = [*cycle.default_headers, CLOSE_HEADER]  # the server's list is shared

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the header clock and let uvicorn clean up."""
        self._disarm()
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        cycle: Any = self.cycle
        return cycle is None or bool(cycle.response_complete)

    def _arm(self, timeout_s: float | None = None) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(timeout_s or self.header_timeout_s, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self._between_requests() or self.transport.is_closing():
            return
        timeout_s = PROBE_HEADER_TIMEOUT_S if self._probe_only is not None else self.header_timeout_s
        log.info("closed a connection from %s: request headers not complete within %gs", self.client, timeout_s)
        self.transport.write(raw_response(408, "Request Timeout", "timeout", "the request headers did not arrive "
                                          f"within {timeout_s:g}s"))
        self.transport.close()


def guarded_protocol(*, header_timeout_s: float, max_connections: int) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` subclass with these limits (uvicorn takes a class)."""
    return type("ConfiguredH11Protocol", (GuardedH11Protocol,),
                {"header_timeout_s": header_timeout_s, "max_connections": max_connections})
