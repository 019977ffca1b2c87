"""Reflector logic against scripted and simulated list/watch (no cluster)."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict

import pytest

from workload_map.gvk import GVK
from workload_map.kube.errors import KubeApiError
from workload_map.kube.graph import GraphSink, ObjectGraph
from workload_map.kube.reflector import Reflector, ReflectorOptions

from .fakes import FakeApiServer, ScriptedListWatch, make_obj, wait_for

POD = GVK("", "v1", "Pod")
FAST = ReflectorOptions(page_size=2, inactivity_timeout=5.0, backoff_base=0.01, backoff_cap=0.05,
                        min_watch_seconds=0.0)

pytestmark = pytest.mark.timeout(30)


def cached(graph: ObjectGraph, namespace: str | None = None) -> dict[tuple[str, str], str]:
    return {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"]["resourceVersion"]
            for o in graph.list(POD, namespace)}


def drain(queue: asyncio.Queue) -> list:
    events = []
    while not queue.empty():
        events.append(queue.get_nowait())
    return events


async def started(server: FakeApiServer, options: ReflectorOptions = FAST, namespace: str | None = None
                  ) -> tuple[Reflector, ObjectGraph]:
    graph = ObjectGraph()
    reflector = Reflector(POD, server.client(namespace), GraphSink(graph, POD), namespace=namespace,
                          options=options, rng=random.Random(7))
    reflector.start()
    assert await wait_for(lambda: reflector.has_synced and server.open_watches > 0)
    return reflector, graph


async def test_paginated_list_then_watch_from_list_rv() -> None:
    server = FakeApiServer(POD)
    for i in range(5):
        server.create(make_obj(POD, f"p{i}"))
    reflector, graph = await started(server)
    try:
        assert server.list_calls == 3, "5 objects in pages of 2"
        assert reflector.state == "synced" and reflector.relists == 1
        assert cached(graph) == server.state()
        assert all(o["kind"] == "Pod" for o in graph.list(POD)), "kind restored on list items"
        call = server.watch_calls[0]
        assert call["resourceVersion"] == str(server.rv) and 300 <= call["timeoutSeconds"] <= 600
        server.create(make_obj(POD, "new"))
        server.update("ns", "p1", status={"phase": "Running"})
        server.delete("ns", "p2")
        assert await wait_for(lambda: cached(graph) == server.state())
        assert reflector.events == 3
    finally:
        await reflector.stop()
    assert not reflector.is_running


async def test_empty_collection_is_synced_with_zero_objects() -> None:
    reflector, graph = await started(FakeApiServer(POD))
    assert reflector.state == "synced" and len(graph.list(POD)) == 0
    await reflector.stop()


async def test_bookmark_advances_rv_and_rewatch_resumes_there() -> None:
    server = FakeApiServer(POD)
    reflector, graph = await started(server)
    server.rv += 40  # other resources moved the global revision on
    server.bookmark()
    assert await wait_for(lambda: reflector.bookmarks == 1)
    assert reflector.last_rv == str(server.rv) and reflector.last_event_time is not None
    server.disconnect()
    assert await wait_for(lambda: len(server.watch_calls) == 2)
    assert server.watch_calls[1]["resourceVersion"] == str(server.rv)
    assert server.list_calls == 1 and reflector.watch_restarts >= 1
    await reflector.stop()


async def test_reconnect_loses_and_duplicates_nothing() -> None:
    server = FakeApiServer(POD)
    server.create(make_obj(POD, "a"))
    reflector, graph = await started(server)
    queue = graph.subscribe()
    server.disconnect()
    server.watch_errors.extend([KubeApiError(0, "ClientConnectorError", "refused")] * 2)
    server.create(make_obj(POD, "b"))
    server.update("ns", "a", status={"phase": "Running"})
    server.delete("ns", "b")
    server.create(make_obj(POD, "c"))
    assert await wait_for(lambda: cached(graph) == server.state() and reflector.state == "synced")
    events = [(e.type, e.obj["metadata"]["name"]) for e in drain(queue)]
    assert events == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "c")]
    assert server.list_calls == 1, "transient errors re-watch from the last RV, no relist"
    assert reflector.last_error.startswith("0 ClientConnectorError") or "refused" in reflector.last_error
    await reflector.stop()


async def test_410_relists_and_emits_synthetic_deletes() -> None:
    server = FakeApiServer(POD)
    for name in "abc":
        server.create(make_obj(POD, name))
    reflector, graph = await started(server)
    queue = graph.subscribe()
    server.hang = True  # the reflector misses everything from here ...
    server.delete("ns", "a")
    server.update("ns", "b", status={"phase": "Failed"})
    server.create(make_obj(POD, "d"))
    server.compact()  # ... and the history is gone
    server.hang = False
    server.disconnect()
    assert await wait_for(lambda: reflector.relists == 2 and cached(graph) == server.state())
    events = sorted((e.type, e.obj["metadata"]["name"]) for e in drain(queue))
    assert events == [("ADDED", "d"), ("DELETED", "a"), ("MODIFIED", "b")]
    assert reflector.state == "synced"
    await reflector.stop()


async def test_error_event_other_than_410_backs_off_then_rewatches() -> None:
    error = {"type": "ERROR", "object": {"kind": "Status", "code": 500, "reason": "InternalError",
                                         "message": "etcd hiccup"}}
    added = {"type": "ADDED", "object": make_obj(POD, "x") | {"metadata": {"name": "x", "namespace": "ns",
                                                                             "uid": "x", "resourceVersion": "12"}}}
    script = ScriptedListWatch([{"metadata": {"resourceVersion": "10"}, "items": []}], [[error], [added]])
    graph = ObjectGraph()
    reflector = Reflector(POD, script, GraphSink(graph, POD), options=FAST)
    reflector.start()
    assert await wait_for(lambda: graph.get(POD, "ns", "x") is not None)
    assert "etcd hiccup" in reflector.last_error and reflector.state == "synced"
    assert [c["resourceVersion"] for c in script.watch_calls[:3]] == ["10", "10", "12"]
    assert script.list_calls == 1
    await reflector.stop()


async def test_410_error_event_relists_immediately() -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "old"}}
    lists = [{"metadata": {"resourceVersion": "10"}, "items": [make_obj(POD, "a", uid="a")]},
             {"metadata": {"resourceVersion": "20"}, "items": [make_obj(POD, "b", uid="b")]}]
    script = ScriptedListWatch(lists, [[gone]])
    graph = ObjectGraph()
    reflector = Reflector(POD, script, GraphSink(graph, POD),
                          options=ReflectorOptions(backoff_base=10, backoff_cap=10, min_watch_seconds=0))
    reflector.start()
    assert await wait_for(lambda: reflector.relists == 2, timeout=3), "no 10 s backoff before the relist"
    assert [o["metadata"]["name"] for o in graph.list(POD)] == ["b"]
    assert script.watch_calls[-1]["resourceVersion"] == "20"
    await reflector.stop()


async def test_inactive_watch_is_reopened() -> None:
    server = FakeApiServer(POD)
    options = ReflectorOptions(inactivity_timeout=0.2, backoff_base=0.01, backoff_cap=0.05)
    reflector, graph = await started(server, options)
    server.hang = True
    server.create(make_obj(POD, "lost-while-hung"))
    assert await wait_for(lambda: reflector.inactivity_timeouts >= 2, timeout=5)
    assert len(server.watch_calls) >= 3 and server.list_calls == 1
    assert server.watch_calls[0]["resourceVersion"] == server.watch_calls[-1]["resourceVersion"]
    server.hang = False
    server.bookmark()
    assert await wait_for(lambda: cached(graph) == server.state())
    await reflector.stop()


async def test_404_is_crd_missing_then_recovers() -> None:
    server = FakeApiServer(POD)
    server.list_errors.extend([KubeApiError(404, "NotFound", "the server could not find the requested resource")] * 2)
    graph = ObjectGraph()
    reflector = Reflector(POD, server.client(), GraphSink(graph, POD), options=FAST)
    reflector.start()
    assert await wait_for(lambda: reflector.state == "crd_missing")
    assert reflector.settled.is_set() and not reflector.has_synced
    assert await wait_for(lambda: reflector.state == "synced")
    assert server.list_calls == 3
    await reflector.stop()


async def test_404_after_sync_drops_objects() -> None:
    script = ScriptedListWatch(
        [{"metadata": {"resourceVersion": "1"}, "items": [make_obj(POD, "a", uid="a")]},
         KubeApiError(404, "NotFound", "gone")],
        [[KubeApiError(404, "NotFound", "gone")]], hang_after=False)
    graph = ObjectGraph()
    reflector = Reflector(POD, script, GraphSink(graph, POD), options=FAST)
    reflector.start()
    assert await wait_for(lambda: reflector.state == "crd_missing")
    assert graph.list(POD) == [] and reflector.has_synced
    await reflector.stop()


async def test_403_is_forbidden() -> None:
    script = ScriptedListWatch([KubeApiError(403, "Forbidden", 'pods is forbidden: User "alice"')] * 50, [])
    graph = ObjectGraph()
    reflector = Reflector(POD, script, GraphSink(graph, POD), options=FAST)
    reflector.start()
    assert await wait_for(lambda: reflector.state == "forbidden")
    assert reflector.settled.is_set() and "alice" in reflector.last_error
    await reflector.stop()


async def test_expired_continue_token_restarts_the_list() -> None:
    server = FakeApiServer(POD)
    for i in range(5):
        server.create(make_obj(POD, f"p{i}"))
    real = server.list_page
    calls = []

    def flaky(namespace, limit, token):  # noqa: ANN001, ANN202
        calls.append(token)
        if len(calls) == 2:
            raise KubeApiError(410, "Expired", "The provided continue parameter is too old")
        return real(namespace, limit, token)

    server.list_page = flaky  # type: ignore[method-assign]
    reflector, graph = await started(server)
    assert calls[0] is None and calls[2] is None, "the list started over"
    assert cached(graph) == server.state()
    await reflector.stop()


async def test_retry_after_is_honoured() -> None:
    script = ScriptedListWatch([KubeApiError(429, "TooManyRequests", "slow down", retry_after=0.3)], [])
    graph = ObjectGraph()
    reflector = Reflector(POD, script, GraphSink(graph, POD), options=FAST)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    reflector.start()
    assert await wait_for(lambda: reflector.has_synced)
    assert loop.time() - t0 >= 0.29
    assert "slow down" in reflector.last_error
    await reflector.stop()


async def test_throttled_watch_keeps_synced_state() -> None:
    script = ScriptedListWatch([{"metadata": {"resourceVersion": "1"}, "items": []}],
                               [[KubeApiError(429, "TooManyRequests", "storage is (re)initializing")]] * 3)
    graph = ObjectGraph()
    reflector = Reflector(POD, script, GraphSink(graph, POD), options=FAST)
    states = []
    reflector.start()
    assert await wait_for(lambda: (states.append(reflector.state), len(script.watch_calls) >= 4)[1])
    assert set(states[states.index("synced"):]) == {"synced"} and "initializing" in reflector.last_error
    await reflector.stop()


class Boom(BaseException):
    """Escapes the loop's ``except Exception`` to exercise task supervision."""


async def test_task_is_restarted_after_any_exit() -> None:
    server = FakeApiServer(POD)
    server.create(make_obj(POD, "a"))
    graph = ObjectGraph()
    sink = GraphSink(graph, POD)
    failures = [Boom(), RuntimeError("bug in sink")]

    class FlakySink:
        async def replace(self, objects, namespace):  # noqa: ANN001, ANN201
            if failures:
                raise failures.pop(0)
            await sink.replace(objects, namespace)

        def apply(self, event_type, obj):  # noqa: ANN001, ANN201
            sink.apply(event_type, obj)

    reflector = Reflector(POD, server.client(), FlakySink(), options=FAST)
    reflector.start()
    assert await wait_for(lambda: reflector.has_synced)
    assert reflector.task_restarts == 1 and "bug in sink" in reflector.last_error
    assert cached(graph) == server.state()
    await reflector.stop()


async def test_namespaced_reflector_only_replaces_its_namespace() -> None:
    server = FakeApiServer(POD)
    server.create(make_obj(POD, "a", "n1"))
    server.create(make_obj(POD, "b", "n2"))
    graph = ObjectGraph()
    graph.apply(POD, "ADDED", make_obj(POD, "other", "n2", uid="o"))
    reflector = Reflector(POD, server.client("n1"), GraphSink(graph, POD), namespace="n1", options=FAST)
    reflector.start()
    assert await wait_for(lambda: reflector.has_synced)
    assert sorted(o["metadata"]["name"] for o in graph.list(POD)) == ["a", "other"]
    server.create(make_obj(POD, "c", "n2"))
    server.create(make_obj(POD, "d", "n1"))
    assert await wait_for(lambda: graph.get(POD, "n1", "d") is not None)
    assert graph.get(POD, "n2", "c") is None
    await reflector.stop()


async def test_randomized_churn_with_disconnects_and_compactions() -> None:
    rng = random.Random(42)
    server = FakeApiServer(POD)
    for i in range(20):
        server.create(make_obj(POD, f"p{i}"))
    reflector, graph = await started(server)
    queue = graph.subscribe()
    counter = 20
    for step in range(400):
        roll = rng.random()
        names = sorted(n for _, n in server.objects)
        if roll < 0.3 or not names:
            server.create(make_obj(POD, f"p{counter}"))
            counter += 1
        elif roll < 0.7:
            server.update("ns", rng.choice(names), status={"phase": rng.choice(["Pending", "Running"]), "i": step})
        elif roll < 0.9:
            server.delete("ns", rng.choice(names))
        elif roll < 0.96:
            server.disconnect()
        else:
            server.compact()
            server.disconnect()
        if rng.random() < 0.3:
            await asyncio.sleep(0)
    assert await wait_for(lambda: cached(graph) == server.state(), timeout=10)
    per_object: dict[str, list[str]] = defaultdict(list)
    for event in drain(queue):
        per_object[event.obj["metadata"]["uid"]].append((event.type, event.obj["metadata"]["resourceVersion"]))
    for uid, history in per_object.items():
        rvs = [int(rv) for _, rv in history]  # a synthetic DELETE repeats the last known RV
        assert rvs == sorted(rvs) and len(set(history)) == len(history), f"{uid}: replayed or reordered {history}"
        types = [t for t, _ in history]
        assert "ADDED" not in types[1:] or types[types.index("ADDED", 1) - 1] == "DELETED"
    assert reflector.relists >= 2
    await reflector.stop()
