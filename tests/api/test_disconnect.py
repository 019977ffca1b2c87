"""A client that goes away mid-request is one INFO line, not an ERROR with a traceback (issue 29 item 8)."""

from __future__ import annotations

import logging

import pytest
from starlette.applications import Starlette
from starlette.types import Message


async def test_a_client_gone_mid_body_is_an_info_line(app: Starlette, caplog: pytest.LogCaptureFixture) -> None:
    sent: list[Message] = []
    messages: list[Message] = [{"type": "http.request", "body": b"apiVersion: run.ai/v1alpha1\n", "more_body": True},
                               {"type": "http.disconnect"}]

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/api/v1/definitions", "raw_path": b"/api/v1/definitions", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/yaml")],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080), "root_path": ""}
    with caplog.at_level(logging.INFO):
        await app(scope, receive, send)
    assert sent[0]["status"] == 400
    gone = [r for r in caplog.records if "went away" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in gone] == [
        (logging.INFO, "client 127.0.0.1 went away during POST /api/v1/definitions")]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
