"""Owner graph: owned_by, descendants, root_of, version bumps and change events."""

from __future__ import annotations

import asyncio

from workload_map.gvk import GVK
from workload_map.kube.graph import ObjectGraph

from .fakes import make_obj

JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
JOB = GVK("batch", "v1", "Job")
POD = GVK("", "v1", "Pod")
SVC = GVK("", "v1", "Service")


def with_rv(obj: dict, rv: str) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": rv}}


def tree() -> tuple[ObjectGraph, dict, list[dict], list[dict]]:
    """A JobSet -> 2 Jobs -> 2 Pods each, plus a Service owned (not controlled) by the JobSet."""
    graph = ObjectGraph()
    js = make_obj(JOBSET, "js", uid="js")
    jobs = [make_obj(JOB, f"js-w-{i}", uid=f"job{i}", owner=js) for i in range(2)]
    pods = [make_obj(POD, f"js-w-{i}-{k}", uid=f"pod{i}{k}", owner=jobs[i]) for i in range(2) for k in range(2)]
    svc = make_obj(SVC, "js", uid="svc")
    svc["metadata"]["ownerReferences"] = [{"apiVersion": JOBSET.api_version, "kind": "JobSet", "name": "js",
                                           "uid": "js"}]
    graph.apply(JOBSET, "ADDED", js)
    for obj in jobs:
        graph.apply(JOB, "ADDED", obj)
    for obj in pods:
        graph.apply(POD, "ADDED", obj)
    graph.apply(SVC, "ADDED", svc)
    return graph, js, jobs, pods


def uids(objs: list[dict]) -> list[str]:
    return [o["metadata"]["uid"] for o in objs]


def test_owned_by_includes_non_controller_refs_across_types() -> None:
    graph, *_ = tree()
    assert uids(graph.owned_by("js")) == ["svc", "job0", "job1"], "ordered by GVK, then key"
    assert uids(graph.owned_by("job1")) == ["pod10", "pod11"]


def test_descendants_follow_controller_refs_breadth_first() -> None:
    graph, *_ = tree()
    assert uids(graph.descendants("js")) == ["job0", "job1", "pod00", "pod01", "pod10", "pod11"]
    assert uids(graph.descendants("js", max_depth=1)) == ["job0", "job1"]
    assert graph.descendants("pod00") == [] and graph.descendants("unknown") == []


def test_root_of_climbs_to_topmost_cached_owner() -> None:
    graph, js, jobs, pods = tree()
    assert graph.root_of(pods[3])["metadata"]["uid"] == "js"
    assert graph.root_of(jobs[0])["metadata"]["uid"] == "js"
    assert graph.root_of(js) is None
    assert graph.root_of(pods[0], max_depth=1)["metadata"]["uid"] == "job0"
    graph.apply(JOBSET, "DELETED", js)
    assert graph.root_of(pods[0])["metadata"]["uid"] == "job0", "stops at the topmost cached owner"


def test_root_of_survives_cycles() -> None:
    graph = ObjectGraph()
    a = make_obj(JOB, "a", uid="a")
    b = make_obj(JOB, "b", uid="b", owner=a)
    a["metadata"]["ownerReferences"] = [{"uid": "b", "controller": True}]
    graph.apply(JOB, "ADDED", a)
    graph.apply(JOB, "ADDED", b)
    # a <-> b: the cycle is cut at its representative, the smallest uid "a": a is the top
    # (no root above it), b's root is a; each is walked once
    assert graph.root_of(a) is None
    assert graph.root_of(b)["metadata"]["uid"] == "a"
    assert uids(graph.descendants("a")) == ["b"]


def test_pod_event_bumps_every_ancestor_only() -> None:
    graph, js, jobs, pods = tree()
    before = {u: graph.version(u) for u in ("js", "job0", "job1", "pod00", "pod10")}
    pod = with_rv({**pods[0], "status": {"phase": "Running"}}, "9")
    graph.apply(POD, "MODIFIED", pod)
    after = {u: graph.version(u) for u in before}
    assert after["js"] > before["js"] and after["job0"] > before["job0"] and after["pod00"] > before["pod00"]
    assert after["job1"] == before["job1"] and after["pod10"] == before["pod10"]
    assert graph.version("never-seen") == 0


def test_versions_never_repeat_after_delete_and_recreate() -> None:
    graph = ObjectGraph()
    seen = set()
    for i in range(3):
        obj = with_rv(make_obj(JOB, "j", uid="j"), str(i))
        graph.apply(JOB, "ADDED", obj)
        seen.add(graph.version("j"))
        graph.apply(JOB, "DELETED", obj)
        assert graph.version("j") == 0
    assert len(seen) == 3


def test_pod_before_its_owner_still_bumps_owner_when_owner_arrives() -> None:
    graph = ObjectGraph()
    js = make_obj(JOBSET, "js", uid="js")
    job = make_obj(JOB, "j", uid="job", owner=js)
    pod = make_obj(POD, "p", uid="pod", owner=job)
    graph.apply(POD, "ADDED", pod)
    assert graph.version("job") > 0, "uncached owner uid is bumped by uid"
    v_js = graph.version("js")
    graph.apply(JOB, "ADDED", job)
    assert graph.version("js") > v_js
    graph.apply(POD, "DELETED", pod)
    graph.apply(JOB, "DELETED", job)
    assert graph.version("job") == 0, "forgotten once nothing refers to it"


async def test_subscribers_get_events_with_root_chain() -> None:
    graph, js, jobs, pods = tree()
    queue = graph.subscribe()
    graph.apply(POD, "MODIFIED", with_rv(pods[2], "50"))
    event = queue.get_nowait()
    assert (event.type, event.gvk, event.root_uids) == ("MODIFIED", POD, ("pod10", "job1", "js"))
    graph.apply(POD, "DELETED", pods[2])
    assert queue.get_nowait().type == "DELETED"
    graph.apply(POD, "DELETED", pods[2])
    assert queue.empty(), "deleting an absent object is no event"
    graph.unsubscribe(queue)
    graph.unsubscribe(queue)
    graph.apply(JOBSET, "MODIFIED", with_rv(js, "60"))
    assert queue.empty()


async def test_full_queue_drops_oldest() -> None:
    graph = ObjectGraph(queue_size=3)
    queue: asyncio.Queue = graph.subscribe()
    for i in range(5):
        graph.apply(JOB, "ADDED", make_obj(JOB, f"j{i}", uid=f"j{i}"))
    assert graph.dropped_events == 2
    assert [queue.get_nowait().obj["metadata"]["name"] for _ in range(3)] == ["j2", "j3", "j4"]


def test_replace_emits_synthetic_deletes_and_clear_drops() -> None:
    graph, *_ = tree()
    queue = graph.subscribe()
    graph.replace(POD, [])
    assert sorted(queue.get_nowait().type for _ in range(4)) == ["DELETED"] * 4
    graph.clear(JOB, drop=True)
    assert JOB not in graph.gvks() and graph.list(JOB) == []
