"""Owner chains (issue 13 item 5): namespace rule, cycles, pods owned by pods or non-components."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from workload_map.paths import REPO_ROOT
from workload_map.definitions import load_definition
from workload_map.definitions.model import Definition
from workload_map.gvk import GVK
from workload_map.kube.graph import ObjectGraph
from workload_map.owners import cycle_message, is_top_level, owner_chain
from workload_map.resolution import resolve
from workload_map.resolution.pods import workload_pods
from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset


def obj(kind: str, name: str, uid: str, namespace: str | None = "a", owner: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if namespace:
        meta["namespace"] = namespace
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "X", "name": "x"}]
    return {"apiVersion": "v1" if kind == "Pod" else "example.com/v1", "kind": kind, "metadata": meta}


@pytest.fixture(scope="module")
def jobset_definition() -> Definition:
    return load_definition((REPO_ROOT / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())


def test_an_owner_in_another_namespace_is_not_an_owner() -> None:
    owner = obj("Thing", "t", "u-t", namespace="a")
    pod = obj("Pod", "p", "u-p", namespace="b", owner="u-t")
    chain = owner_chain(pod, {"u-t": owner}.get)
    assert chain.ancestors == [] and chain.foreign is owner and chain.top is None


def test_a_cluster_scoped_owner_may_own_a_namespaced_object_but_not_the_reverse() -> None:
    cluster = obj("Node", "n", "u-n", namespace=None)
    pod = obj("Pod", "p", "u-p", namespace="b", owner="u-n")
    assert owner_chain(pod, {"u-n": cluster}.get).uids() == ["u-n"]
    namespaced = obj("Thing", "t", "u-t", namespace="a")
    scoped = obj("Volume", "v", "u-v", namespace=None, owner="u-t")
    assert owner_chain(scoped, {"u-t": namespaced}.get).foreign is namespaced


def test_a_cycle_is_cut_at_the_smallest_uid_and_named() -> None:
    # x (uid u-2) -> y (u-1) -> z (u-3) -> x: representative u-1 (y)
    x, y, z = obj("Thing", "x", "u-2", owner="u-1"), obj("Thing", "y", "u-1", owner="u-3"), obj("Thing", "z", "u-3",
                                                                                                   owner="u-2")
    lookup = {"u-1": y, "u-2": x, "u-3": z}.get
    assert owner_chain(x, lookup).uids() == ["u-1"]
    assert owner_chain(y, lookup).uids() == []
    assert owner_chain(z, lookup).uids() == ["u-2", "u-1"]
    chain = owner_chain(x, lookup)
    assert cycle_message(chain.cycle) == "ownerReference cycle: Thing a/x -> Thing a/y -> Thing a/z -> Thing a/x"
    # exactly one member is top-level when all three have a definition
    assert [o["metadata"]["name"] for o in (x, y, z) if is_top_level(o, lookup, lambda _: True)] == ["y"]
    # a pod below z reaches z, x and y (the walk ends at the representative), each once
    pod = obj("Pod", "p", "u-p", owner="u-3")
    assert owner_chain(pod, lookup).uids() == ["u-3", "u-2", "u-1"]


def test_the_walk_is_bounded_by_six_hops() -> None:
    objects = {f"u-{i}": obj("Thing", f"t{i}", f"u-{i}", owner=f"u-{i + 1}") for i in range(10)}
    assert len(owner_chain(obj("Pod", "p", "u-p", owner="u-0"), objects.get).ancestors) == 6


def test_a_pod_in_another_namespace_carrying_the_jobsets_uid_is_not_its_pod(jobset_definition: Definition) -> None:
    jobs, pods = jobs_and_pods()
    intruder = copy.deepcopy(pods[0])  # namespace b, directly "owned" by the JobSet's uid
    intruder["metadata"].update(name="intruder", uid="uid-intruder", namespace="team-b",
                                ownerReferences=[{"uid": "uid-js", "controller": True, "kind": "JobSet"}])
    job_b = copy.deepcopy(jobs[1])  # a Job in namespace b "owned" by the JobSet, with its own pod
    job_b["metadata"].update(name="job-b", uid="uid-job-b", namespace="team-b")
    pod_b = copy.deepcopy(pods[1])
    pod_b["metadata"].update(name="pod-b", uid="uid-pod-b", namespace="team-b",
                             ownerReferences=[{"uid": "uid-job-b", "controller": True, "kind": "Job"}])
    view = resolve(jobset_definition, jobset(status=RUNNING_STATUS), objects=[*jobs, job_b],
                   pods=[*pods, intruder, pod_b])
    # only the 3 pods of namespace ml count: 3 x 4 GPUs = 12, not 5 x 4 = 20
    assert sorted(p.name for p in view.all_pods()) == sorted(p["metadata"]["name"] for p in pods)
    assert view.gpu.to_dict()["requestedByPods"] == 12 and view.replicas.current == 3


def test_a_cycle_through_the_root_is_reported_and_the_rest_resolves(jobset_definition: Definition) -> None:
    jobs, pods = jobs_and_pods()
    root = jobset(status=RUNNING_STATUS)  # the JobSet claims to be controlled by its own leader Job
    root["metadata"]["ownerReferences"] = [{"uid": "uid-job-leader-0", "controller": True, "kind": "Job"}]
    view = resolve(jobset_definition, root, objects=jobs, pods=pods)
    assert [e.message for e in view.errors] == [
        "ownerReference cycle: JobSet ml/train -> Job ml/train-leader-0 -> JobSet ml/train"]
    # the cycle {uid-js, uid-job-leader-0} is cut at its smallest uid, "uid-job-leader-0" ("o" < "s"):
    # the leader Job is the cycle's top and the one listed; its pod's chain ends there, so the
    # JobSet's own view keeps the 2 worker pods (2 x 4 = 8 GPUs); the worker pods' chains run
    # Job -> JobSet -> leader Job, so the listed top covers all 3 pods, each counted once.
    assert view.replicas.current == 2 and view.gpu.to_dict()["requestedByPods"] == 8
    lookup = {o["metadata"]["uid"]: o for o in (root, *jobs)}.get
    assert [o["metadata"]["name"] for o in (root, *jobs) if is_top_level(o, lookup, lambda _: True)] == [
        "train-leader-0"]
    assert all("uid-job-leader-0" in owner_chain(p, {**{o["metadata"]["uid"]: o for o in (root, *jobs)}}.get).uids()
               for p in pods)


def test_a_cycle_of_two_pods_is_reported_on_the_pod_listed_for_it() -> None:
    # pods a (uid u-a) and b (u-b), each the other's controller: the cycle is cut at u-a, so
    # a is the workload listed (the core Pod definition); b reaches the resolver as one of
    # its pods, not as one of its objects, and the cycle runs through it: before, no warning
    # named it (a self-owned pod got one)
    a, b = obj("Pod", "a", "u-a", owner="u-b"), obj("Pod", "b", "u-b", owner="u-a")
    for pod in (a, b):
        pod["apiVersion"] = "v1"
        pod["spec"] = {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}
    graph = ObjectGraph()
    for pod in (a, b):
        graph.apply(GVK("", "v1", "Pod"), "ADDED", pod)
    definition = load_definition((REPO_ROOT / "catalog" / "core-pod-v1.yaml").read_text())
    descendants = graph.descendants("u-a")
    assert [o["metadata"]["name"] for o in descendants] == ["b"]
    view = resolve(definition, a, objects=[], pods=descendants)
    assert [e.message for e in view.errors] == ["ownerReference cycle: Pod a/a -> Pod a/b -> Pod a/a"]
    assert [p.name for p in view.all_pods()] == ["a"] and view.gpu.to_dict()["requestedByPods"] == 1


def test_pods_owned_by_a_pod_or_a_non_component_object_belong_to_the_top_workload() -> None:
    root = obj("SparkApplication", "spark", "u-app")
    driver = obj("Pod", "driver", "u-driver", owner="u-app")
    executor = obj("Pod", "exec-1", "u-exec", owner="u-driver")
    group = obj("PodGroup", "pg", "u-pg", owner="u-app")  # not a component of any definition
    grouped = obj("Pod", "grouped", "u-grouped", owner="u-pg")
    stranger = obj("Pod", "stranger", "u-s", owner="u-other")
    found = workload_pods(root, [group], [driver, executor, grouped, stranger])
    assert [p["metadata"]["name"] for p in found] == ["driver", "exec-1", "grouped"]


def test_cache_graph_descendants_and_root_follow_the_namespace_rule() -> None:
    graph = ObjectGraph(full=True)
    thing = GVK("example.com", "v1", "Thing")
    pod_gvk = GVK("", "v1", "Pod")
    graph.apply(thing, "ADDED", obj("Thing", "t", "u-t", namespace="a"))
    mine = obj("Pod", "mine", "u-mine", namespace="a", owner="u-t")
    theirs = obj("Pod", "theirs", "u-theirs", namespace="b", owner="u-t")
    graph.apply(pod_gvk, "ADDED", mine)
    graph.apply(pod_gvk, "ADDED", theirs)
    assert [p["metadata"]["name"] for p in graph.descendants("u-t")] == ["mine"]
    assert graph.root_of(theirs) is None and graph.root_of(mine)["metadata"]["uid"] == "u-t"
    before = graph.version("u-t")
    graph.apply(pod_gvk, "MODIFIED", {**theirs, "status": {"phase": "Running"}})
    assert graph.version("u-t") == before  # a foreign pod's change does not touch the owner's view
