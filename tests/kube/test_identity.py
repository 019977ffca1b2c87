"""Identity (issue 28): objects are keyed by group/kind/namespace/name; a shared uid is a conflict.

Kubernetes gives every object its own uid; two distinct objects with one uid come from a copied
manifest or a restore. The cache keeps both (they are distinct keys) and reports the conflict;
the dependents that name the uid as their owner are attached to neither.
Working: the seed JobSet (leader 1 + worker 2 Jobs, one pod each, 4 GPUs per pod) -> 3 pods,
12 GPUs when its uid is its own.
"""

from __future__ import annotations

import copy

from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset
from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService

JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")


def _copy_named(obj: dict, name: str) -> dict:
    twin = copy.deepcopy(obj)
    twin["metadata"]["name"] = name
    twin["metadata"].pop("resourceVersion", None)
    return twin


def test_a_uid_on_two_objects_is_a_conflict_and_owns_nothing() -> None:
    jobs, pods = jobs_and_pods()
    original = jobset(status=RUNNING_STATUS)
    uid = original["metadata"]["uid"]
    reader = SnapshotReader([original, *jobs, *pods])
    assert reader.uid_conflicts(uid) == [] and len(reader.descendants(uid)) == 6  # 3 Jobs + 3 pods
    reader.add(_copy_named(original, "train-copy"))
    namespace = original["metadata"]["namespace"]
    assert reader.uid_conflicts(uid) == sorted([f"jobset.x-k8s.io/JobSet {namespace}/train",
                                                f"jobset.x-k8s.io/JobSet {namespace}/train-copy"])
    assert reader.get(JOBSET, namespace, "train") is not None  # both kept: distinct keys
    assert reader.get(JOBSET, namespace, "train-copy") is not None
    assert reader.descendants(uid) == []  # no Job or pod is attached to the wrong JobSet
    reader.remove(JOBSET, namespace, "train-copy")
    assert reader.uid_conflicts(uid) == []
    assert reader.by_uid(uid) is reader.get(JOBSET, namespace, "train")  # the one left owns the uid again
    assert len(reader.descendants(uid)) == 6


def test_a_uid_shared_across_kinds_is_a_conflict_too() -> None:
    original = jobset(status=RUNNING_STATUS)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": original["metadata"]["namespace"],
                               "uid": original["metadata"]["uid"]}, "spec": {"replicas": 1}}
    reader = SnapshotReader([original, deployment])
    assert [c.split(" ")[0] for c in reader.uid_conflicts(original["metadata"]["uid"])] == [
        "apps/Deployment", "jobset.x-k8s.io/JobSet"]
    reader.remove(GVK("apps", "v1", "Deployment"), deployment["metadata"]["namespace"], "web")
    assert reader.by_uid(original["metadata"]["uid"]) is not None
    assert reader.uid_conflicts(original["metadata"]["uid"]) == []


def test_the_view_reports_the_conflict_naming_both_and_counts_no_pod() -> None:
    jobs, pods = jobs_and_pods()
    original = jobset(status=RUNNING_STATUS)
    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    (alone,) = WorkloadService(registry, SnapshotReader([original, *jobs, *pods])).workloads()
    assert (alone.replicas.current, alone.gpu.to_dict()["requestedByPods"]) == (3, 12)
    views = WorkloadService(registry, SnapshotReader([original, _copy_named(original, "train-copy"), *jobs,
                                                      *pods])).workloads()
    assert views, "the conflicted workload is still listed"
    for view in views:
        (error,) = [e for e in view.errors if e.field == "metadata.uid"]
        assert "train" in error.message and "train-copy" in error.message and "held by 2 distinct" in error.message
        assert view.phase.value == "Undefined"
        assert view.replicas.current == 0 and view.gpu.to_dict()["requestedByPods"] == 0  # no pod attached
