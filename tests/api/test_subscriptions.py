"""workloadPhaseChanged over SSE and graphql-transport-ws, against a real uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json

import httpx
import websockets
from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import JOBSET
from tests.api.live import serving, wait_until
from tests.api.objects import running

SUBSCRIPTION = """subscription { workloadPhaseChanged(namespace: "ml", kind: "jobset") {
    phase previousPhase phases workload { name gpu { requestedBySpec } } } }"""


def _start_running(reader: SnapshotReader) -> None:
    jobset = reader.list(next(g for g in reader.gvks() if g.kind == "JobSet"))[0]
    reader.add(running(dict(jobset)))


async def test_sse_subscription_delivers_the_phase_change(settings: Settings) -> None:
    reader = SnapshotReader.from_paths(JOBSET)
    app = create_app(settings, reader=reader)
    async with serving(app) as host, httpx.AsyncClient(timeout=10) as client:
        before = app.state.runtime.service.feed.subscribers
        async with client.stream("POST", f"http://{host}/graphql", json={"query": SUBSCRIPTION},
                                 headers={"Accept": "text/event-stream"}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            await wait_until(lambda: app.state.runtime.service.feed.subscribers > before, 5)
            _start_running(reader)
            payload = await asyncio.wait_for(_first_data(response), 5)
        change = payload["data"]["workloadPhaseChanged"]
        assert change == {"phase": "RUNNING", "previousPhase": "INITIALIZING", "phases": ["RUNNING"],
                          "workload": {"name": "train", "gpu": {"requestedBySpec": 12}}}
        await wait_until(lambda: app.state.runtime.service.feed.subscribers == before, 5)  # released after the client left


async def _first_data(response: httpx.Response) -> dict:
    async for line in response.aiter_lines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])
    raise AssertionError("stream ended without data")


async def test_websocket_subscription_delivers_the_phase_change(settings: Settings) -> None:
    reader = SnapshotReader.from_paths(JOBSET)
    app = create_app(settings, reader=reader)
    async with serving(app) as host:
        before = app.state.runtime.service.feed.subscribers
        async with websockets.connect(f"ws://{host}/graphql", subprotocols=["graphql-transport-ws"],
                                      open_timeout=5) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "connection_ack"
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
            await wait_until(lambda: app.state.runtime.service.feed.subscribers > before, 5)
            _start_running(reader)
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 5))
                if message["type"] == "next":
                    break
            assert message["payload"]["data"]["workloadPhaseChanged"]["phase"] == "RUNNING"
        await wait_until(lambda: app.state.runtime.service.feed.subscribers == before, 5)


async def test_graphql_query_over_http(settings: Settings) -> None:
    app = create_app(settings, reader=SnapshotReader.from_paths(JOBSET))
    async with serving(app) as host, httpx.AsyncClient(timeout=10) as client:
        response = await client.post(f"http://{host}/graphql", json={"query": "{ workloads { totalCount } }"})
        assert response.json() == {"data": {"workloads": {"totalCount": 1}}}
        assert (await client.get(f"http://{host}/readyz")).status_code == 200


async def test_a_bad_websocket_subscription_ends_only_itself(settings: Settings) -> None:
    reader = SnapshotReader.from_paths(JOBSET)
    app = create_app(settings, reader=reader)
    async with serving(app) as host:
        before = app.state.runtime.service.feed.subscribers
        async with websockets.connect(f"ws://{host}/graphql", subprotocols=["graphql-transport-ws"],
                                      open_timeout=5) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 5))["type"] == "connection_ack"
            await ws.send(json.dumps({"id": "good", "type": "subscribe", "payload": {"query": SUBSCRIPTION}}))
            await wait_until(lambda: app.state.runtime.service.feed.subscribers > before, 5)
            await ws.send(json.dumps({"id": "bad", "type": "subscribe", "payload": {"query": "subscription { ("}}))
            error = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert (error["type"], error["id"]) == ("error", "bad")
            assert error["payload"][0]["message"].startswith("Syntax Error")
            _start_running(reader)  # the good one still delivers on the same socket
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 5))
                if message["type"] == "next":
                    break
            assert (message["id"], message["payload"]["data"]["workloadPhaseChanged"]["phase"]) == ("good", "RUNNING")


async def test_a_websocket_before_start_up_attached_a_service_is_closed_with_try_again_later(
        settings: Settings) -> None:
    # it was answered with an HTTP response, which uvicorn refuses on a WebSocket: an ASGI error
    # in the log and the client cut off (a fresh-user trial, during a snapshot's load); the
    # window is held open here by taking the attached service away for the connection
    app = create_app(settings, reader=SnapshotReader.from_paths(JOBSET))
    async with serving(app) as host:
        runtime = app.state.runtime
        service, runtime.service = runtime.service, None
        try:
            async with websockets.connect(f"ws://{host}/graphql", subprotocols=["graphql-transport-ws"],
                                          open_timeout=5) as ws:
                assert ws.subprotocol == "graphql-transport-ws"
                try:
                    await asyncio.wait_for(ws.recv(), 5)
                except websockets.ConnectionClosed as closed:
                    assert (closed.rcvd.code, closed.rcvd.reason) == (1013, "the server is starting; retry shortly")
                else:
                    raise AssertionError("the socket stayed open")
        finally:
            runtime.service = service
