"""Trimming on ingest: what pods, CRDs and other objects keep."""

from __future__ import annotations

from workload_map.gvk import GVK
from workload_map.kube.trim import LAST_APPLIED, trim

POD = GVK("", "v1", "Pod")
JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
CRD = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")


def full_pod() -> dict:
    return {
        "metadata": {
            "name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "generation": 1,
            "labels": {"app": "x"}, "annotations": {LAST_APPLIED: "{...}", "keep": "me"},
            "ownerReferences": [{"uid": "owner", "controller": True}],
            "creationTimestamp": "2024-01-01T00:00:00Z", "deletionTimestamp": "2024-01-02T00:00:00Z",
            "managedFields": [{"manager": "kubectl"}], "finalizers": ["x"], "generateName": "p-",
        },
        "spec": {
            "containers": [{"name": "c", "image": "img", "env": [{"name": "A"}], "restartPolicy": "Always",
                            "resources": {"requests": {"nvidia.com/gpu": "2"}}}],
            "initContainers": [{"name": "i", "command": ["x"], "resources": {}}],
            "volumes": [{"name": "v"}], "nodeName": "n1", "schedulerName": "kai", "priorityClassName": "high",
            "overhead": {"cpu": "100m"}, "resources": {"limits": {"cpu": "1"}}, "affinity": {"x": 1},
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}], "reason": "r",
                   "message": "m", "startTime": "t", "podIP": "10.0.0.1", "containerStatuses": [{"name": "c"}]},
    }


def test_pod_keeps_only_listed_fields() -> None:
    pod = full_pod()
    out = trim(POD, pod)
    assert out["apiVersion"] == "v1" and out["kind"] == "Pod"
    assert set(out["metadata"]) == {"name", "namespace", "uid", "labels", "annotations", "ownerReferences",
                                    "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation"}
    assert out["metadata"]["annotations"] == {"keep": "me"}
    assert out["spec"] == {
        "containers": [{"name": "c", "restartPolicy": "Always", "resources": {"requests": {"nvidia.com/gpu": "2"}}}],
        "initContainers": [{"name": "i", "resources": {}}],
        "nodeName": "n1", "schedulerName": "kai", "priorityClassName": "high",
        "overhead": {"cpu": "100m"}, "resources": {"limits": {"cpu": "1"}},
    }
    assert out["status"] == {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                             "reason": "r", "message": "m", "startTime": "t"}
    assert pod == full_pod(), "input must not be mutated"


def test_generic_drops_managed_fields_and_last_applied_only() -> None:
    obj = {"metadata": {"name": "js", "managedFields": [1], "annotations": {LAST_APPLIED: "x"}},
           "spec": {"replicatedJobs": [{"name": "w"}]}, "status": {"x": 1}}
    out = trim(JOBSET, obj)
    assert out == {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                   "metadata": {"name": "js", "annotations": {}},
                   "spec": {"replicatedJobs": [{"name": "w"}]}, "status": {"x": 1}}
    assert "managedFields" in obj["metadata"]


def test_full_keeps_pod_fields() -> None:
    out = trim(POD, full_pod(), full=True)
    assert out["spec"]["volumes"] == [{"name": "v"}]
    assert "managedFields" not in out["metadata"]


def test_crd_keeps_names_scope_versions_conditions() -> None:
    crd = {"metadata": {"name": "jobsets.jobset.x-k8s.io", "uid": "c1", "resourceVersion": "5", "managedFields": []},
           "spec": {"group": "jobset.x-k8s.io", "scope": "Namespaced",
                    "names": {"kind": "JobSet", "plural": "jobsets", "singular": "jobset", "listKind": "JobSetList"},
                    "versions": [{"name": "v1alpha2", "served": True, "storage": True, "schema": {"big": "x"}}]},
           "status": {"conditions": [{"type": "Established", "status": "True", "message": "ok"}],
                      "acceptedNames": {}}}
    out = trim(CRD, crd)
    assert out["spec"] == {"group": "jobset.x-k8s.io", "scope": "Namespaced",
                           "names": {"kind": "JobSet", "plural": "jobsets", "singular": "jobset"},
                           "versions": [{"name": "v1alpha2", "served": True, "storage": True}]}
    assert out["status"] == {"conditions": [{"type": "Established", "status": "True"}]}


def test_malformed_fields_do_not_raise() -> None:
    owned = {"name": "p", "ownerReferences": [{"uid": "rs", "controller": True}]}
    out = trim(POD, {"metadata": owned, "spec": "nonsense", "status": None})
    assert out["spec"] == {} and out["status"] == {}
    # a standalone pod is kept as given (the definition's paths meet the same values)
    out = trim(POD, {"metadata": {"name": "p"}, "spec": "nonsense", "status": None})
    assert out["spec"] == "nonsense" and out["status"] is None


def test_a_pod_no_controller_owns_stays_whole() -> None:
    # a standalone pod may be a workload of its own: a definition reads its root with any
    # path (condition times, containerStatuses) and writes its spec (nodeSelector, tolerations)
    pod = full_pod()
    pod["metadata"]["ownerReferences"] = [{"uid": "owner", "controller": False}]
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-01T00:00:00Z"}]
    out = trim(POD, pod)
    assert out["status"]["conditions"] == [{"type": "Ready", "status": "False",
                                            "lastTransitionTime": "2026-12-01T00:00:00Z"}]
    assert out["status"]["containerStatuses"] == [{"name": "c"}] and out["spec"]["volumes"] == [{"name": "v"}]
    assert out["spec"]["affinity"] == {"x": 1} and "managedFields" not in out["metadata"]
    assert out["metadata"]["annotations"] == {"keep": "me"}  # last-applied still dropped


def test_an_owned_pod_condition_keeps_type_status_reason_message() -> None:
    pod = full_pod()
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                    "message": "0/4 nodes", "lastProbeTime": None,
                                    "lastTransitionTime": "2026-12-01T00:00:00Z"}]
    out = trim(POD, pod)
    assert out["status"]["conditions"] == [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                            "message": "0/4 nodes"}]
