"""Errors people can act on: JSON with a code and a message everywhere, client mistakes
logged below ERROR, subscription syntax errors delivered as messages, bounded metric
labels."""

from __future__ import annotations

import logging
import re

import httpx
import pytest


async def test_unknown_routes_and_methods_are_json(client: httpx.AsyncClient) -> None:
    missing = await client.get("/api/v1/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    brew = await client.request("BREW", "/livez")
    assert brew.status_code == 405 and brew.json() == {"error": "method_not_allowed", "message": "Method Not Allowed",
                                                      "details": []}


async def test_made_up_methods_add_one_series(client: httpx.AsyncClient) -> None:
    for index in range(10):
        await client.request(f"MADEUP{index}", "/livez")
    text = (await client.get("/metrics")).text
    methods = set(re.findall(r'wmap_http_request_duration_seconds_count\{method="([^"]+)"', text))
    # ten invented methods share the label "other"; the real GET of /metrics is labelled later
    assert "other" in methods and not any(m.startswith("MADEUP") for m in methods)
    counts = re.findall(r'wmap_http_request_duration_seconds_count\{method="other",route="/livez",status="405"\} '
                        r'([0-9.]+)', text)
    assert counts == ["10.0"]


async def test_subscription_syntax_error_is_delivered_over_sse(client: httpx.AsyncClient) -> None:
    query = "subscription { workloadPhaseChanged( }"
    async with client.stream("POST", "/graphql", json={"query": query}, headers={"Accept": "text/event-stream"}) as r:
        assert r.status_code == 200
        text = ""
        async for chunk in r.aiter_text():  # the stream ends after the error (bounded)
            text += chunk
    assert "event: next" in text and "Syntax Error: Expected Name, found '}'." in text
    assert "event: complete" in text


async def test_client_mistakes_are_logged_at_info_without_tracebacks(client: httpx.AsyncClient,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    await client.post("/graphql", json={"query": "{ workloads( }"})
    await client.post("/graphql", json={"query": "{ nope }"})
    await client.post("/graphql", json={"query": "{ ...A } fragment A on Query { ...A }"})
    await client.post("/graphql", content="not json", headers={"Content-Type": "application/json"})
    await client.post("/api/v1/definitions", content="x: [", headers={"Content-Type": "application/yaml"})
    await client.post("/api/v1/definitions", content="x", headers={"Content-Type": "text/plain"})
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert not any(r.exc_info for r in caplog.records)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any("Syntax Error" in m for m in infos) and any("FRAGMENT_CYCLE" in m for m in infos)
