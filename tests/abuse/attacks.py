"""Small attack helpers over raw sockets and httpx, every loop bounded in count and time."""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import httpx


def open_slow(port: int, prefix: bytes = b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n") -> socket.socket:
    """A connection that has sent the start of a request and nothing more."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall(prefix)
    return conn


def read_until_closed(conn: socket.socket, timeout_s: float) -> bytes:
    """Everything the server sends until it closes the connection (or ``timeout_s`` passes)."""
    conn.settimeout(0.5)
    data, deadline = b"", time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def response_parts(raw: bytes) -> tuple[int, dict[str, str], Any]:
    """(status, headers, decoded JSON body) of one raw HTTP/1.1 response."""
    status, headers, body = raw_parts(raw)
    return status, headers, json.loads(body or b"null")


def raw_parts(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """(status, headers with lower-case names, body bytes) of one raw HTTP/1.1 response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def livez_ok(base: str, timeout_s: float = 10.0) -> bool:
    """True when /livez answers 200 within ``timeout_s``."""
    try:
        return httpx.get(f"{base}/livez", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def read_response(conn: socket.socket, timeout_s: float = 10.0) -> bytes:
    """One complete raw response (headers and its ``content-length`` of body), leaving the
    connection open; whatever arrived by ``timeout_s`` when the server sends less."""
    conn.settimeout(0.5)
    data, deadline = b"", time.monotonic() + timeout_s
    while time.monotonic() < deadline and not _complete(data):
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            break
        data += chunk
    return data


def _complete(raw: bytes) -> bool:
    head, found, body = raw.partition(b"\r\n\r\n")
    if not found:
        return False
    _, headers, _ = raw_parts(head)
    return len(body) >= int(headers.get("content-length", "0"))
