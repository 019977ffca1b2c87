"""LoadSheddingMiddleware in front of a handler that holds its slot (awaits): slots,
queue, 503 with Retry-After, health never counted, the body read before a slot."""

from __future__ import annotations

import asyncio

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from workload_map.api.shedding import LoadSheddingMiddleware, is_expensive


def app_with(release: asyncio.Event, running: list[int]) -> LoadSheddingMiddleware:
    async def slow(request: Request) -> JSONResponse:
        body = await request.body()
        running.append(1)
        await release.wait()
        return JSONResponse({"bytes": len(body)})

    async def livez(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    inner = Starlette(routes=[Route("/graphql", slow, methods=["POST"]), Route("/livez", livez)])
    return LoadSheddingMiddleware(inner, slots=2, queue=3, wait_s=5)


async def test_two_run_three_wait_the_rest_get_503() -> None:
    release, running = asyncio.Event(), []
    shedder = app_with(release, running)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=shedder), base_url="http://test") as client:
        tasks = [asyncio.create_task(client.post("/graphql", content=b"{}")) for _ in range(8)]
        for _ in range(100):  # bounded: until 2 run and 3 wait
            await asyncio.sleep(0.01)
            if len(running) == 2 and shedder.waiting == 3:
                break
        assert (len(running), shedder.waiting) == (2, 3)
        assert (await client.get("/livez")).status_code == 200  # takes no slot
        release.set()
        answers = await asyncio.gather(*tasks)
    statuses = sorted(r.status_code for r in answers)
    # 8 requests: 2 run, 3 wait and run later, 8 - 5 = 3 refused
    assert statuses == [200] * 5 + [503] * 3
    busy = next(r for r in answers if r.status_code == 503)
    assert busy.headers["retry-after"] == "1"
    assert busy.json()["error"] == "overloaded" and "2 expensive requests running" in busy.json()["message"]
    assert all(r.json() == {"bytes": 2} for r in answers if r.status_code == 200)
    assert shedder.refused == 3


def test_which_requests_are_expensive() -> None:
    def scope(path: str, method: str = "POST", accept: str = "*/*") -> dict[str, object]:
        return {"type": "http", "path": path, "method": method, "headers": [(b"accept", accept.encode())]}
    assert is_expensive(scope("/graphql"))
    assert is_expensive(scope("/api/v1/workloads", "GET"))
    assert is_expensive(scope("/api/v1/namespaces/ml/workloads", "GET"))
    assert not is_expensive(scope("/api/v1/namespaces/ml/workloads/g/K/n", "GET"))
    assert not is_expensive(scope("/livez", "GET")) and not is_expensive(scope("/readyz", "GET"))
    assert not is_expensive(scope("/graphql", accept="text/event-stream"))
    assert not is_expensive(scope("/graphql", "GET", accept="text/html,application/xhtml+xml"))
