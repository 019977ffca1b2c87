"""Identity conflicts in the service (issue 28 item 3): two objects, one uid, two workloads.

A real API server assigns every uid itself, so two live objects never share one: the
conflict comes from snapshot files (a copied manifest) or a restore into another name.
The tests therefore feed the objects through the snapshot reader, whose add/remove
deliver the same change events the informers do, to the same materializer the server
runs (offline here, the background pool through the app below).

Objects: the seed JobSet ``ml/train`` (uid ``uid-js``; leader 1 + worker 2 replicated Jobs,
one pod each, 4 GPUs per pod: 3 pods, 12 GPUs by spec and by pods, phase Running) and
``ml/train-copy``, the same manifest under another name with the same uid.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset
from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotReader
from workload_map.materialization.feed import Subscriber
from workload_map.materialization.views import ViewStore, holder_key, uid_of_key
from workload_map.resolution import WorkloadView
from workload_map.service.workloads import WorkloadService

JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
CONFLICT = ("identity conflict: uid uid-js is held by 2 distinct objects (jobset.x-k8s.io/JobSet ml/train, "
            "jobset.x-k8s.io/JobSet ml/train-copy); the objects that name it as their owner are attached to none")


def copy_named(obj: dict[str, Any], name: str, resource_version: str = "7") -> dict[str, Any]:
    twin = copy.deepcopy(obj)
    twin["metadata"].update(name=name, resourceVersion=resource_version)
    return twin


def rows(service: WorkloadService) -> list[tuple[str, str, int, int, int, list[str]]]:
    """(name, phase, pods, GPUs by spec, GPUs by pods, errors on metadata.uid) per listed workload."""
    return [(v.name, v.phase.value, len(v.all_pods()), v.gpu.to_dict()["requestedBySpec"],
             v.gpu.to_dict()["requestedByPods"], [e.message for e in v.errors if e.field == "metadata.uid"])
            for v in service.workloads()]


def drained(subscriber: Subscriber) -> list[tuple[str, str]]:
    """(type, name) of every change queued so far."""
    out = []
    while not subscriber.queue.empty():
        change = subscriber.queue.get_nowait()
        out.append((change.type, change.name))
    return out


def service_over(*objects: dict[str, Any]) -> tuple[WorkloadService, SnapshotReader]:
    reader = SnapshotReader(list(objects))
    return WorkloadService(DefinitionRegistry(load_catalog(default_catalog_dir())), reader), reader


# the conflicting pair: 12 GPUs by spec each (the spec is theirs alone), no pod attached to either
CONFLICTED = [("train", "Undefined", 0, 12, 0, [CONFLICT]), ("train-copy", "Undefined", 0, 12, 0, [CONFLICT])]
# alone: 3 pods (leader 1 + worker 2, one pod per Job), 3 x 4 = 12 GPUs by spec and by pods
ALONE = [("train", "Running", 3, 12, 12, [])]


def test_a_snapshot_with_two_holders_lists_two_workloads() -> None:
    jobs, pods = jobs_and_pods()
    original = jobset(status=RUNNING_STATUS)
    service, _ = service_over(original, copy_named(original, "train-copy"), *jobs, *pods)
    assert rows(service) == CONFLICTED
    # both are found by identity; by uid, the first holder (sorted by group/Kind ns/name)
    assert service.workload("ml", "jobset.x-k8s.io", "JobSet", "train-copy").name == "train-copy"
    view = service.view_of("uid-js")
    assert view is not None and view.name == "train"
    # the summary counts each holder once: 2 workloads, 24 GPUs by spec, none by pods
    (bucket,) = service.gpu_summary("NAMESPACE")
    assert (bucket.key, bucket.workloads, bucket.spec, bucket.pods) == ("ml", 2, {"nvidia.com/gpu": Decimal(24)}, {})


def test_holders_follow_changes_through_the_materializer() -> None:
    jobs, pods = jobs_and_pods()
    original = jobset(status=RUNNING_STATUS)
    service, reader = service_over(original, *jobs, *pods)
    assert rows(service) == ALONE
    feed = service.feed.subscribe()
    # a copy arrives: train moves to its own key (one modified), train-copy is added
    reader.add(copy_named(original, "train-copy"))
    assert rows(service) == CONFLICTED
    assert drained(feed) == [("modified", "train"), ("added", "train-copy")]
    # train-copy changes (worker replicas 2 -> 4): only its view, 1 x 4 + 4 x 4 = 20 GPUs by spec
    bigger = copy_named(original, "train-copy", resource_version="8")
    bigger["spec"]["replicatedJobs"][1]["replicas"] = 4
    reader.add(bigger)
    assert rows(service) == [CONFLICTED[0], ("train-copy", "Undefined", 0, 20, 0, [CONFLICT])]
    assert drained(feed) == [("modified", "train-copy")]
    # train-copy is deleted: train is a normal workload again with its 3 pods (one modified)
    reader.remove(JOBSET, "ml", "train-copy")
    assert rows(service) == ALONE
    assert drained(feed) == [("modified", "train"), ("removed", "train-copy")]
    assert service.store.uids() == ["uid-js"]
    # re-created, then the original deleted: train-copy keeps the uid and takes train's 3 pods
    # (their Jobs name the uid as owner, and train-copy is now the one object holding it)
    reader.add(copy_named(original, "train-copy", resource_version="9"))
    assert rows(service) == CONFLICTED
    reader.remove(JOBSET, "ml", "train")
    assert rows(service) == [("train-copy", "Running", 3, 12, 12, [])]
    assert drained(feed) == [("modified", "train"), ("added", "train-copy"), ("modified", "train-copy"),
                             ("removed", "train")]
    assert service.store.uids() == ["uid-js"]


def test_a_uid_held_across_kinds_gives_a_workload_each() -> None:
    # a Deployment restored with the JobSet's uid: both are workloads (the catalog covers
    # Deployments), both carry the conflict, the JobSet's 3 pods go to neither
    jobs, pods = jobs_and_pods()
    original = jobset(status=RUNNING_STATUS)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "ml", "uid": "uid-js", "resourceVersion": "1"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    service, reader = service_over(original, deployment, *jobs, *pods)
    views: list[WorkloadView] = service.workloads()
    assert [(v.kind, v.name, v.phase.value, len(v.all_pods())) for v in views] == [
        ("Deployment", "web", "Undefined", 0), ("JobSet", "train", "Undefined", 0)]
    assert all("apps/Deployment ml/web, jobset.x-k8s.io/JobSet ml/train" in e.message
               for v in views for e in v.errors if e.field == "metadata.uid")
    reader.remove(GVK("apps", "v1", "Deployment"), "ml", "web")
    assert rows(service) == ALONE


def test_the_store_keeps_holders_apart_even_with_one_sort_key() -> None:
    # two holder keys of one view: same (namespace, kind, name, uid) sort key, as holders told
    # apart by group only would have; each is listed, removed on its own, and the uid index empties
    service, _ = service_over(jobset(status=RUNNING_STATUS))
    service.workloads()  # resolves (the service materializes on first read)
    record = service.store.get("uid-js")
    assert record is not None
    store = ViewStore()
    first, second = holder_key("uid-js", "a/JobSet ml/train"), holder_key("uid-js", "b/JobSet ml/train")
    store.put(record.entry, record.view, first)
    store.put(record.entry, record.view, second)
    assert (len(store), store.keys_of("uid-js"), uid_of_key(second)) == (2, [first, second], "uid-js")
    assert [r.view.name for r in store.snapshot().records] == ["train", "train"]
    store.remove(second)
    assert store.uids() == [first] and store.keys_of("uid-js") == [first]
    assert len(store.snapshot().records) == 1  # list order lost the removed key, not the other
    store.remove(first)
    assert (len(store), store.keys_of("uid-js"), store.snapshot().records) == (0, [], ())
    assert store.summary("NAMESPACE") == (store.generation, [])  # the aggregates went back to nothing


def test_a_resolution_in_flight_when_the_conflict_starts_is_not_recorded() -> None:
    # the plain uid's job is resolved (train alone: 3 pods), then the copy arrives before the
    # outcome is posted: the outcome is dropped (no stale view with train's pods under the uid),
    # and the next round resolves the two holders
    jobs, pods = jobs_and_pods()
    original = jobset(status=RUNNING_STATUS)
    service, reader = service_over(original, *jobs, *pods)
    assert rows(service) == ALONE
    materializer = service._offline
    assert materializer is not None and materializer._resolver is not None
    job = materializer._job("uid-js")
    assert job is not None
    (outcome,) = materializer._resolver.resolve([job])
    feed = service.feed.subscribe()
    reader.add(copy_named(original, "train-copy"))
    materializer._on_outcome(outcome)
    assert drained(feed) == []
    assert rows(service) == CONFLICTED
    assert drained(feed) == [("modified", "train"), ("added", "train-copy")]


def test_two_pods_of_one_workload_holding_one_uid_are_both_counted_with_an_error() -> None:
    # the leader's pod manifest copied into worker-0's pod with its uid kept: both pods stay
    # (namespace/name differ), each in its own instance of the replicated Job component; the view names the conflict
    jobs, pods = jobs_and_pods()
    leader_pod, worker_pod = pods[0], pods[1]
    worker_pod["metadata"]["uid"] = leader_pod["metadata"]["uid"]
    service, reader = service_over(jobset(status=RUNNING_STATUS), *jobs, *pods)
    (view,) = service.workloads()
    # 3 pods x 4 GPUs = 12 by pods, as by spec; the store's owner index alone held one of the two
    assert (view.phase.value, len(view.all_pods()), view.gpu.to_dict()["requestedByPods"]) == ("Running", 3, 12)
    by_instance = {i.id: sorted(p.name for p in i.pods) for c in view.all_components() for i in c.instances}
    assert by_instance == {"leader": ["train-leader-0-0-abcde"],
                           "worker": ["train-worker-0-0-abcde", "train-worker-1-0-abcde"]}
    assert [e.message for e in view.errors if e.field == "dependents"] == [
        "identity conflict: uid uid-pod-leader-0 is held by 2 distinct objects (Pod ml/train-leader-0-0-abcde, "
        "Pod ml/train-worker-0-0-abcde); each holder found below the workload is counted, but what they own cannot "
        "be told apart by uid (it may be missing here) and a lookup by uid finds one of them"]
    # the copy is removed: 2 pods, 8 GPUs by pods, no error
    reader.remove(GVK("", "v1", "Pod"), "ml", "train-worker-0-0-abcde")
    (view,) = service.workloads()
    assert (len(view.all_pods()), view.gpu.to_dict()["requestedByPods"], view.errors) == (2, 8, [])


def test_a_pod_holding_the_uid_of_a_pod_of_another_workload_is_named_on_both() -> None:
    # train's leader pod and a pod of another JobSet (train-2, its own Job and pod) share a uid:
    # each workload counts its own pod (3 and 1 pods, 12 and 4 GPUs) and both name the conflict
    jobs, pods = jobs_and_pods()
    other = jobset(status=RUNNING_STATUS)
    other["metadata"].update(name="train-2", uid="uid-js-2")
    other["spec"]["replicatedJobs"] = [other["spec"]["replicatedJobs"][0]]  # the leader replicated Job only
    job2 = copy.deepcopy(jobs[0])
    job2["metadata"].update(name="train-2-leader-0", uid="uid-job-2")
    job2["metadata"]["ownerReferences"][0].update(name="train-2", uid="uid-js-2")
    job2["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] = "train-2"
    pod2 = copy.deepcopy(pods[0])  # the leader pod's manifest, uid kept
    pod2["metadata"].update(name="train-2-leader-0-0-abcde")
    pod2["metadata"]["ownerReferences"][0].update(name="train-2-leader-0", uid="uid-job-2")
    pod2["metadata"]["labels"].update({"jobset.sigs.k8s.io/jobset-name": "train-2",
                                       "batch.kubernetes.io/job-name": "train-2-leader-0"})
    service, _ = service_over(jobset(status=RUNNING_STATUS), other, *jobs, job2, *pods, pod2)
    message = ("identity conflict: uid uid-pod-leader-0 is held by 2 distinct objects (Pod ml/train-2-leader-0-0-abcde, "
               "Pod ml/train-leader-0-0-abcde); each holder found below the workload is counted, but what they own "
               "cannot be told apart by uid (it may be missing here) and a lookup by uid finds one of them")
    got = [(v.name, len(v.all_pods()), v.gpu.to_dict()["requestedByPods"], [e.message for e in v.errors
                                                                          if e.field == "dependents"])
           for v in service.workloads()]
    assert got == [("train", 3, 12, [message]), ("train-2", 1, 4, [message])]
