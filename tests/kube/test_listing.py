"""Lists as issue 23 wants them: pipelined pages, relists that cost nothing for unchanged
objects, lists applied in slices, pages and watch lines decoded by msgspec."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest

from workload_map.gvk import GVK
from workload_map.kube.api import decode_json
from workload_map.kube.errors import KubeApiError
from workload_map.kube.graph import GraphSink, ObjectGraph
from workload_map.kube.listing import list_all
from workload_map.kube.reflector import Reflector, ReflectorOptions

from .fakes import FakeApiServer, make_obj, wait_for

POD = GVK("", "v1", "Pod")
FAST = ReflectorOptions(page_size=2, inactivity_timeout=5.0, backoff_base=0.01, backoff_cap=0.05,
                        min_watch_seconds=0.0)

pytestmark = pytest.mark.timeout(30)


class Pages:
    """A ``ListWatch`` whose list pages are answered one at a time by the test (``release``)."""

    def __init__(self, pages: list[list[dict[str, Any]]]) -> None:
        self.pages = pages
        self.log: list[str] = []
        self.gates = [asyncio.Event() for _ in pages]

    async def list_page(self, *, limit: int, continue_token: str | None) -> dict[str, Any]:
        index = int(continue_token or 0)
        self.log.append(f"request {index}")
        await self.gates[index].wait()
        meta = {"resourceVersion": "42"} | ({"continue": str(index + 1)} if index + 1 < len(self.pages) else {})
        return {"metadata": meta, "items": self.pages[index]}

    def watch(self, **_: Any) -> Any:
        raise AssertionError("not watched here")


async def test_next_page_is_requested_before_this_one_is_prepared() -> None:
    pages = [[make_obj(POD, f"p{i}-{j}") for j in range(2)] for i in range(3)]
    source = Pages(pages)

    def prepare(obj: Any) -> dict[str, Any]:
        source.log.append(f"prepare {obj['metadata']['name']}")
        return dict(obj)

    task = asyncio.create_task(list_all(source, prepare, 2))
    for gate in source.gates:
        gate.set()
        await asyncio.sleep(0.05)
    items, rv = await task
    assert rv == "42" and [o["metadata"]["name"] for o in items] == [o["metadata"]["name"] for p in pages for o in p]
    assert items.prepared
    # page 1 is asked for as soon as page 0 arrived, before any item of page 0 is prepared
    assert source.log == ["request 0", "request 1", "prepare p0-0", "prepare p0-1",
                          "request 2", "prepare p1-0", "prepare p1-1", "prepare p2-0", "prepare p2-1"]


async def test_a_failing_page_cancels_nothing_left_behind() -> None:
    class Expiring(Pages):
        async def list_page(self, *, limit: int, continue_token: str | None) -> dict[str, Any]:
            if continue_token:
                raise KubeApiError(410, "Expired", "continue token expired")
            return await super().list_page(limit=limit, continue_token=continue_token)

    source = Expiring([[make_obj(POD, "a")], [make_obj(POD, "b")]])
    source.gates[0].set()
    with pytest.raises(KubeApiError) as raised:
        await list_all(source, None, 1)
    assert raised.value.needs_relist


async def test_relist_of_unchanged_objects_trims_nothing_and_emits_nothing() -> None:
    server = FakeApiServer(POD)
    for name in "abcde":
        server.create(make_obj(POD, name, status={"phase": "Running"}))
    graph = ObjectGraph()
    trimmed: list[str] = []
    trim = graph.trim

    def counting_trim(gvk: GVK, obj: Any) -> dict[str, Any]:
        trimmed.append(obj["metadata"]["name"])
        return trim(gvk, obj)

    graph.trim = counting_trim  # type: ignore[method-assign]
    reflector = Reflector(POD, server.client(), GraphSink(graph, POD), options=FAST, rng=random.Random(3))
    reflector.start()
    assert await wait_for(lambda: reflector.has_synced and server.open_watches > 0)
    assert sorted(trimmed) == list("abcde")
    held = {o["metadata"]["name"]: o for o in graph.list(POD)}
    queue = graph.subscribe()
    trimmed.clear()
    server.hang = True
    server.update("ns", "c", status={"phase": "Failed"})
    server.compact()  # the watch from the old resourceVersion gets 410: a relist
    server.hang = False
    server.disconnect()
    assert await wait_for(lambda: reflector.relists == 2)
    assert trimmed == ["c"], "only the changed object is trimmed again"
    events = [(e.type, e.obj["metadata"]["name"], e.obj["status"]["phase"]) for e in _drain(queue)]
    assert events == [("MODIFIED", "c", "Failed")]
    for name in "abde":
        assert graph.get(POD, "ns", name) is held[name], "unchanged objects are kept as they were"
    await reflector.stop()


async def test_a_list_is_applied_in_slices_with_the_loop_served_between() -> None:
    graph = ObjectGraph()
    sink = GraphSink(graph, POD, slice_size=2)
    order: list[str] = []
    graph.add_listener(lambda event: order.append(event.obj["metadata"]["name"]))

    async def other() -> None:
        for i in range(3):
            order.append(f"loop{i}")
            await asyncio.sleep(0)

    objects = [graph.trim(POD, make_obj(POD, f"p{i}", uid=f"u{i}")) for i in range(5)]
    graph.apply(POD, "ADDED", make_obj(POD, "gone", uid="g"))
    order.clear()
    await asyncio.gather(sink.replace(objects, None, prepared=True), other())
    assert order == ["p0", "p1", "loop0", "p2", "p3", "loop1", "p4", "gone", "loop2"]
    assert sorted(o["metadata"]["name"] for o in graph.list(POD)) == [f"p{i}" for i in range(5)]


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


@pytest.mark.parametrize("text", [
    b'{"items": [{"metadata": {"name": "a", "resourceVersion": "7"}, "spec": {"n": 1.5, "ok": true}}]}',
    b'{"a": "caf\\u00e9", "b": [null, -3, 2e3], "c": {}}',
])
def test_decode_json_equals_json_loads(text: bytes) -> None:
    assert decode_json(text) == json.loads(text)


def test_decode_json_falls_back_for_integers_beyond_64_bits() -> None:
    assert decode_json(b'{"big": 123456789012345678901234567890}') == {"big": 123456789012345678901234567890}


def test_decode_json_reports_where_the_text_is_malformed() -> None:
    with pytest.raises(ValueError, match="line 1 column 8"):
        decode_json(b'{"a": 1')
