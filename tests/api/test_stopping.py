"""A GraphQL operation whose request was given up stops at its next field (issue 29 item 3)."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import httpx
import pytest

from workload_map.graphql.schema import schema
from workload_map.graphql.stopping import STOP_KEY


async def test_a_set_stop_event_ends_the_operation_before_any_field() -> None:
    stop = threading.Event()
    stop.set()
    context = SimpleNamespace(request=SimpleNamespace(scope={STOP_KEY: stop}))
    with pytest.raises(asyncio.CancelledError):
        await schema.execute("{ definitions { name } }", context_value=context)


async def test_the_view_sets_the_stop_event_when_the_request_ends(client: httpx.AsyncClient,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[threading.Event] = []
    original = schema.execute

    async def recording(*args: object, **kwargs: object) -> object:
        context = kwargs.get("context_value")
        event = context.request.scope[STOP_KEY]  # type: ignore[attr-defined, union-attr]
        assert not event.is_set()  # running: not stopped
        seen.append(event)
        return await original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(schema, "execute", recording)
    body = (await client.post("/graphql", json={"query": "{ workloads { totalCount } }"})).json()
    assert body == {"data": {"workloads": {"totalCount": 1}}}  # the fixture's one JobSet
    assert len(seen) == 1 and seen[0].is_set()  # set once the request ended
