"""Connections and load: slow headers and bodies are cut off, the connection cap answers
503, expensive requests beyond their slots get 503 with Retry-After, and /livez answers
throughout. Against a real ``wmap serve`` (tests/abuse/conftest.py: 2 s header and body
timeouts, 500 connections, 2 expensive slots + 8 waiting)."""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.abuse.attacks import livez_ok, open_slow, raw_parts, read_response, read_until_closed, response_parts
from tests.abuse.server import Served, serve
from workload_map.api.connections import PROBE_SLOTS

PHASE = "/api/v1/namespaces/ml-training/workloads/jobset.x-k8s.io/JobSet/llm-pretrain/phase"
PORTAL = (Path(__file__).parent / "portal_query.graphql").read_text(encoding="utf-8")


def test_slow_headers_are_cut_off_and_livez_answers_meanwhile(server: Served) -> None:
    slow = [open_slow(server.port) for _ in range(400)]  # the 400 trickling connections
    try:
        for conn in slow[:200]:
            conn.sendall(b"X-Trickle: 1")  # a byte now and then does not extend the clock
        assert livez_ok(server.base)  # 400 slow clients hold no worker
        answers = [read_until_closed(conn, timeout_s=15) for conn in slow]
    finally:
        for conn in slow:
            conn.close()
    # every one was closed by the 2 s header timeout with a JSON 408
    for raw in answers:
        status, _, body = response_parts(raw)
        assert status == 408 and body["error"] == "timeout"
        assert body["message"] == "the request headers did not arrive within 2s"
    assert livez_ok(server.base)


def test_slow_body_gets_a_json_408(server: Served) -> None:
    conn = open_slow(server.port, b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                  b"Content-Length: 1000\r\n\r\n{\"query\": \"")
    try:
        raw = read_until_closed(conn, timeout_s=15)
    finally:
        conn.close()
    status, _, body = response_parts(raw)
    message = "the request body did not arrive within 2s"
    # a /graphql refusal carries GraphQL's errors list too (docs/api.md, GraphQL errors)
    assert status == 408 and body == {"error": "body_timeout", "message": message, "details": [], "errors": [
        {"message": message, "extensions": {"code": "TIMEOUT", "error": "body_timeout"}}]}
    assert livez_ok(server.base)


def test_connection_cap_answers_503_and_recovers(tmp_path: Path) -> None:
    with serve(tmp_path, "--max-connections", "20", "--header-timeout", "2") as capped:
        refused = _over_the_cap(capped, 30 + PROBE_SLOTS)
        # the refused and released connections close asynchronously: /livez answers again
        # once the server has counted them (polled, bounded by 10 s)
        deadline = time.monotonic() + 10
        while not livez_ok(capped.base, timeout_s=2) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert livez_ok(capped.base)
    assert refused >= 10  # 46 - 20 - 16 probe slots (a refused connection is closed, so a later one may get in)


def test_probes_are_answered_at_the_connection_cap(tmp_path: Path) -> None:
    """The issue's attack: long polls hold every connection; probes still get 200, other requests 503."""
    with serve(tmp_path, "--max-connections", "20", "--header-timeout", "2") as capped:
        polls = [open_slow(capped.port, f"GET {PHASE}?wait=Failed&timeout=60s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                                        .encode()) for _ in range(20)]
        try:
            _wait_until(lambda: _status(capped.base + "/api/v1/workloads") == 503)  # the cap is reached
            for path in ("/livez", "/readyz", "/healthz"):
                assert _status(capped.base + path) == 200, path
            refused = httpx.get(capped.base + "/api/v1/workloads", timeout=10)
            assert (refused.status_code, refused.json()["error"]) == (503, "too_many_connections")
        finally:
            for conn in polls:
                conn.close()


LIVEZ = b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
TYPENAME = b'{"query": "{ __typename }"}'
GRAPHQL = (b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n%s" % (len(TYPENAME), TYPENAME))


def test_a_probe_slot_serves_one_request_then_closes(tmp_path: Path) -> None:
    """Over the cap, a probe slot answers its probe with connection: close and closes; a
    /graphql sent after it on the same connection is never served."""
    with serve(tmp_path, "--max-connections", "20", "--header-timeout", "2") as capped:
        polls = [_long_poll(capped.port) for _ in range(20)]
        try:
            _wait_until(lambda: _status(capped.base + "/api/v1/workloads") == 503)  # the cap is reached
            probe = socket.create_connection(("127.0.0.1", capped.port), timeout=10)
            probe.sendall(LIVEZ)
            status, headers, body = raw_parts(read_response(probe))
            assert (status, headers.get("connection"), body) == (200, "close", b"ok")
            with contextlib.suppress(OSError):  # the server may have closed its end already
                probe.sendall(GRAPHQL)
            started = time.monotonic()
            after = read_until_closed(probe, timeout_s=4)  # below the 5 s keep-alive time
            closed_within_s = time.monotonic() - started
            probe.close()
        finally:
            for conn in polls:
                conn.close()
    assert after == b"" and closed_within_s < 4


def test_ordinary_connections_below_the_cap_stay_alive(tmp_path: Path) -> None:
    """18 long polls of a cap of 20: another connection is ordinary and serves request after
    request without connection: close."""
    with serve(tmp_path, "--max-connections", "20", "--header-timeout", "2") as capped:
        polls = [_long_poll(capped.port) for _ in range(18)]
        try:
            conn = socket.create_connection(("127.0.0.1", capped.port), timeout=10)
            answers = []
            for request in (LIVEZ, GRAPHQL, LIVEZ):
                conn.sendall(request)
                answers.append(raw_parts(read_response(conn)))
            conn.close()
        finally:
            for poll in polls:
                poll.close()
    assert [status for status, _, _ in answers] == [200, 200, 200]
    assert [headers.get("connection") for _, headers, _ in answers] == [None, None, None]
    assert [body for _, _, body in answers] == [b"ok", b'{"data":{"__typename":"Query"}}', b"ok"]


def _long_poll(port: int) -> socket.socket:
    """An ordinary connection held by a phase wait of up to 60 s."""
    return open_slow(port, f"GET {PHASE}?wait=Failed&timeout=60s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())


def _status(url: str) -> int:
    try:
        return httpx.get(url, timeout=5).status_code
    except httpx.HTTPError:
        return 0


def _wait_until(predicate: Callable[[], bool], wait_s: float = 15.0) -> None:
    deadline = time.monotonic() + wait_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def _over_the_cap(server: Served, count: int, expect: int = 10, wait_s: float = 10.0) -> int:
    """Open ``count`` connections and hold them; the number answered 503 (polled until ``expect``
    have been, or ``wait_s`` passed: refusals arrive asynchronously on a loaded machine)."""
    held: list[socket.socket] = []
    refused = 0
    try:
        for _ in range(count):
            held.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
        pending, deadline = list(held), time.monotonic() + wait_s
        while pending and refused < expect and time.monotonic() < deadline:
            readable, _, _ = select.select(pending, [], [], 0.2)
            for conn in readable:
                pending.remove(conn)
                first = conn.recv(4096)
                if first and b" 408 " not in first.split(b"\r\n", 1)[0]:  # a probe slot's header timeout
                    status, headers, body = response_parts(first)
                    assert (status, headers["retry-after"], body["error"]) == (503, "1", "too_many_connections")
                    refused += 1
    finally:
        for conn in held:
            conn.close()
    return refused


async def test_concurrent_pages_are_answered_or_shed_and_livez_answers(server: Served) -> None:
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=server.base, timeout=60, limits=limits) as client:
        async def page() -> httpx.Response:
            return await client.post("/graphql", json={"query": PORTAL})

        pages = [asyncio.create_task(page()) for _ in range(100)]
        await asyncio.sleep(0.2)
        livez = await client.get("/livez")  # never waits for a slot
        answers = await asyncio.gather(*pages)
    assert livez.status_code == 200
    # each one is answered: the page (the sample's 141 workloads) or a 503 to retry
    assert {r.status_code for r in answers} <= {200, 503}
    for busy in (r for r in answers if r.status_code == 503):
        assert busy.headers["retry-after"] == "1" and busy.json()["error"] == "overloaded"
    served = [r.json() for r in answers if r.status_code == 200]
    assert served and all(b["data"]["workloads"]["totalCount"] == 141 for b in served)
