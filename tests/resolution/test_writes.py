"""Write locations computed from definitions (issue 15 item 1), worked out by hand per type."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from workload_map.definitions.load import load_definition
from workload_map.errors import InvalidRequest
from workload_map.resolution.changes import parse_change
from workload_map.resolution.paths import NotWritable, parse_write_path, pointer
from workload_map.resolution.writes import MissingDefinitionField, plan_pod_change, plan_suspend

CATALOG = Path(__file__).resolve().parents[2] / "catalog"


def catalog(name: str) -> Any:
    return load_definition(yaml.safe_load((CATALOG / f"{name}.yaml").read_text(encoding="utf-8")))


def container(name: str = "trainer") -> dict[str, Any]:
    return {"name": name, "image": "img", "resources": {"limits": {"nvidia.com/gpu": "4"}}}


def jobset() -> dict[str, Any]:
    def job(name: str) -> dict[str, Any]:
        return {"name": name, "replicas": 1, "template": {"spec": {"template": {
            "metadata": {"labels": {"role": name}}, "spec": {"containers": [container()]}}}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "train", "namespace": "ml", "resourceVersion": "41"},
            "spec": {"replicatedJobs": [job("leader"), job("worker")]}}


def test_paths_of_plain_and_selected_expressions() -> None:
    obj = jobset()
    # .spec.replicatedJobs[] iterates both entries: indices 0 (leader) and 1 (worker)
    every = parse_write_path(".spec.replicatedJobs[].template.spec.template", "f").locate(obj)
    assert [pointer(p) for p in every] == ["/spec/replicatedJobs/0/template/spec/template",
                                           "/spec/replicatedJobs/1/template/spec/template"]
    # select keeps the entry whose name is worker: index 1 only
    chosen = parse_write_path('.spec.replicatedJobs[] | select(.name == "worker") | .template', "f").locate(obj)
    assert chosen == [("spec", "replicatedJobs", 1, "template")]
    assert parse_write_path('.metadata.labels["a/b"]', "f").locate(obj) == [("metadata", "labels", "a/b")]
    assert pointer(("metadata", "labels", "a/b")) == "/metadata/labels/a~1b"
    for expression in ('{name: "x"}', ".spec.replicas + 1", "first(.spec.x)", 'if . then .a else .b end'):
        with pytest.raises(NotWritable) as refused:
            parse_write_path(expression, "spec.x.podSpecPath")
        assert "spec.x.podSpecPath" in str(refused.value) and expression in str(refused.value)


def test_jobset_worker_label_and_toleration_land_in_index_1_only() -> None:
    obj, before = jobset(), jobset()
    change = parse_change({"components": ["replicatedjob"], "instances": ["worker"], "labels": {"team": "a"},
                           "tolerations": [{"key": "gpu", "operator": "Exists"}]})
    plan = plan_pod_change(catalog("jobset-x-k8s-io-jobset-v1alpha2"), obj, change)
    assert obj == before  # the input is not modified
    worker = "/spec/replicatedJobs/1/template/spec/template"
    # resourceVersion precondition first, then one add per changed field of index 1
    assert plan.patch == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "41"},
        {"op": "add", "path": f"{worker}/metadata/labels/team", "value": "a"},
        {"op": "add", "path": f"{worker}/spec/tolerations", "value": [{"key": "gpu", "operator": "Exists"}]},
    ]
    expected = copy.deepcopy(before)
    template = expected["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    template["metadata"]["labels"]["team"] = "a"
    template["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    assert plan.updated == expected  # leader (index 0) untouched
    assert [t.describe()["instance"] for t in plan.targets] == ["worker"]


def test_a_compacted_object_with_shared_templates_is_written_at_one_place() -> None:
    # the cache shares equal sub-trees (workload_map.kube.compact): both PyTorchJob replica
    # specs below are ONE dict; a change of the workers must not reach the master
    from workload_map.kube.compact import SharedValues, compact

    spec = {"replicas": 1, "template": {"spec": {"containers": [container("pytorch")]}}}
    obj = compact({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                   "metadata": {"name": "p", "resourceVersion": "7"},
                   "spec": {"pytorchReplicaSpecs": {"Master": spec, "Worker": copy.deepcopy(spec)}}}, SharedValues())
    specs = obj["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"] is specs["Worker"]
    change = parse_change({"components": ["worker"], "labels": {"team": "a"}})
    plan = plan_pod_change(catalog("kubeflow-org-pytorchjob-v1"), obj, change)
    updated = plan.updated["spec"]["pytorchReplicaSpecs"]
    assert updated["Worker"]["template"]["metadata"] == {"labels": {"team": "a"}}
    assert "metadata" not in updated["Master"]["template"]  # master untouched
    assert "metadata" not in specs["Worker"]["template"]  # the cached object untouched
    assert plan.patch == [{"op": "replace", "path": "/metadata/resourceVersion", "value": "7"},
                          {"op": "add", "path": "/spec/pytorchReplicaSpecs/Worker/template/metadata",
                           "value": {"labels": {"team": "a"}}}]


def test_pytorchjob_worker_env_and_resources() -> None:
    obj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "p", "resourceVersion": "7"},
           "spec": {"pytorchReplicaSpecs": {
               "Master": {"replicas": 1, "template": {"spec": {"containers": [container("pytorch")]}}},
               "Worker": {"replicas": 3, "template": {"spec": {"containers": [container("pytorch")]}}}}}}
    change = parse_change({"components": ["worker"], "containers": [{
        "name": "pytorch", "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
        "resources": {"limits": {"nvidia.com/gpu": "8"}}}]})
    plan = plan_pod_change(catalog("kubeflow-org-pytorchjob-v1"), obj, change)
    base = "/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0"
    # existing keys first (resources.limits replaced 4 -> 8), then the new env list
    assert plan.patch[1:] == [{"op": "replace", "path": f"{base}/resources/limits/nvidia.com~1gpu", "value": "8"},
                              {"op": "add", "path": f"{base}/env", "value": [{"name": "NCCL_DEBUG", "value": "INFO"}]}]
    with pytest.raises(InvalidRequest, match="no container 'nope'"):
        plan_pod_change(catalog("kubeflow-org-pytorchjob-v1"), obj,
                        parse_change({"containers": [{"name": "nope", "env": [{"name": "A", "value": "1"}]}]}))


def test_lws_leader_and_worker_templates() -> None:
    definition = catalog("leaderworkerset-x-k8s-io-leaderworkerset-v1")
    lws: dict[str, Any] = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                           "metadata": {"name": "l", "resourceVersion": "3"},
                           "spec": {"replicas": 2, "leaderWorkerTemplate": {
                               "size": 4, "leaderTemplate": {"spec": {"containers": [container()]}},
                               "workerTemplate": {"spec": {"containers": [container()]}}}}}
    plan = plan_pod_change(definition, lws, parse_change({"schedulerName": "kai"}))
    # leader: the first alternative (leaderTemplate) is set; worker: workerTemplate
    assert {t.component.name: t.describe()["paths"]["spec"] for t in plan.targets} == {
        "leader": "/spec/leaderWorkerTemplate/leaderTemplate/spec",
        "worker": "/spec/leaderWorkerTemplate/workerTemplate/spec"}
    del lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    # without leaderTemplate the leader runs the worker template: `a // b` locates b
    only = plan_pod_change(definition, lws, parse_change({"components": ["leader"], "schedulerName": "kai"}))
    assert only.patch[1:] == [{"op": "add", "path": "/spec/leaderWorkerTemplate/workerTemplate/spec/schedulerName",
                               "value": "kai"}]


def test_fragment_definition_paths_and_refusals() -> None:
    definition = catalog("apps-nvidia-com-nimservice-v1alpha1")
    nim = {"apiVersion": "apps.nvidia.com/v1alpha1", "kind": "NIMService",
           "metadata": {"name": "n", "resourceVersion": "9"}, "spec": {"labels": {"x": "1"}}}
    plan = plan_pod_change(definition, nim, parse_change({"labels": {"team": "a", "x": None},
                                                          "priorityClassName": "high"}))
    # labelsPath .spec.labels, priorityClassNamePath .spec.priorityClassName
    assert plan.updated["spec"] == {"labels": {"team": "a"}, "priorityClassName": "high"}
    with pytest.raises(NotWritable, match="fragmentedPodSpecDefinition.*tolerations"):
        plan_pod_change(definition, nim, parse_change({"tolerations": [{"key": "k", "operator": "Exists"}]}))
    # containerPath builds an object ({name: ..., resources: ...}): not a path, refused by name
    with pytest.raises(NotWritable, match="containerPath"):
        plan_pod_change(definition, nim, parse_change({"containers": [{"name": "n-ctr",
                                                                       "resources": {"limits": {"cpu": "1"}}}]}))


def test_suspend_and_resume_actions() -> None:
    definition = catalog("jobset-x-k8s-io-jobset-v1alpha2")
    obj = jobset()
    suspended = plan_suspend(definition, obj, True)
    assert suspended.patch == [{"op": "replace", "path": "/metadata/resourceVersion", "value": "41"},
                               {"op": "add", "path": "/spec/suspend", "value": True}]
    assert plan_suspend(definition, suspended.updated, False).updated["spec"]["suspend"] is False
    assert plan_suspend(definition, suspended.updated, True).patch == []  # already suspended: nothing to send
    with pytest.raises(MissingDefinitionField, match="suspendDefinition"):
        plan_suspend(catalog("apps-deployment-v1"), {"metadata": {}}, True)


def test_bad_selection_and_bodies() -> None:
    definition, obj = catalog("jobset-x-k8s-io-jobset-v1alpha2"), jobset()
    with pytest.raises(InvalidRequest, match="no instance 'nope'"):
        plan_pod_change(definition, obj, parse_change({"instances": ["nope"], "labels": {"a": "b"}}))
    with pytest.raises(InvalidRequest, match="no component 'wrker'"):
        plan_pod_change(definition, obj, parse_change({"components": ["wrker"], "labels": {"a": "b"}}))
    for body, message in (({}, "nothing to change"), ({"labels": {"a": 1}}, "labels.a"),
                          ({"image": "x"}, "unknown field 'image'")):
        with pytest.raises(InvalidRequest, match=message):
            parse_change(body)
