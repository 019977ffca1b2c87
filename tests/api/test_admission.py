"""AdmissionMiddleware: at most ``per_turn`` requests per event-loop turn, in arrival order;
health requests never wait."""

from __future__ import annotations

import asyncio

from starlette.types import Message, Receive, Scope, Send

from workload_map.api.admission import AdmissionMiddleware


async def _receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _send(message: Message) -> None:
    return None


async def test_a_burst_is_admitted_four_per_turn_and_livez_at_once() -> None:
    entered: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        entered.append(scope["path"])

    admission = AdmissionMiddleware(app, per_turn=4)
    paths = [f"/graphql/{i}" for i in range(12)] + ["/livez"]
    tasks = [asyncio.create_task(admission({"type": "http", "path": p}, _receive, _send)) for p in paths]
    await asyncio.sleep(0)  # one turn: every task has taken its first step
    # 4 of the 12 queries got this turn's allowance; /livez (arrived last) did not wait
    assert entered == ["/graphql/0", "/graphql/1", "/graphql/2", "/graphql/3", "/livez"]
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert [p for p in entered if p != "/livez"] == paths[:-1]  # arrival order kept


async def test_a_cancelled_waiter_gives_its_place_up() -> None:
    entered: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        entered.append(scope["path"])

    admission = AdmissionMiddleware(app, per_turn=1)
    tasks = [asyncio.create_task(admission({"type": "http", "path": f"/r{i}"}, _receive, _send)) for i in range(3)]
    await asyncio.sleep(0)
    assert entered == ["/r0"]
    tasks[1].cancel()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
    # /r1 was cancelled while waiting: /r2 still gets in
    assert entered == ["/r0", "/r2"]
