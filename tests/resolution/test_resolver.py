"""Resolution end to end on hand-written objects; every figure worked out by hand."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from workload_map.paths import REPO_ROOT
from workload_map.definitions import Phase, load_definition
from workload_map.definitions.model import Definition
from workload_map.resolution import resolve
from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset


@pytest.fixture(scope="module")
def jobset_definition() -> Definition:
    return load_definition((REPO_ROOT / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())


@pytest.mark.parametrize("parallelism", [None, 1])
def test_seed_jobset_is_one_workload_with_leader_and_worker_and_12_gpus(jobset_definition: Definition,
                                                                        parallelism: int | None) -> None:
    jobs, pods = jobs_and_pods()
    view = resolve(jobset_definition, jobset(parallelism=parallelism, status=RUNNING_STATUS), objects=jobs, pods=pods)
    # leader 1 x 1 pod + worker 2 x 1 pod = 3 pods; 3 pods x 4 GPUs = 12
    assert [r.name for r in view.roles()] == ["leader", "worker"]
    assert [(r.replicas.desired, r.replicas.current, r.replicas.ready) for r in view.roles()] == [(1, 1, 1), (2, 2, 2)]
    assert (view.replicas.desired, view.replicas.current, view.replicas.ready) == (3, 3, 3)
    gpu = view.gpu.to_dict()
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (12, 12, 12)
    assert view.phase is Phase.RUNNING and view.phases == [Phase.RUNNING]
    assert view.errors == [] and view.unattributed == []
    assert view.gangs[0].min_member == 3


def test_parallelism_multiplies_desired_pods(jobset_definition: Definition) -> None:
    # parallelism 2: leader 1 x 2 + worker 2 x 2 = 6 pods, 24 GPUs by spec
    view = resolve(jobset_definition, jobset(parallelism=2))
    assert view.replicas.desired == 6
    assert view.gpu.to_dict()["requestedBySpec"] == 24


def test_pending_unscheduled_pods_are_requested_but_not_allocated(jobset_definition: Definition) -> None:
    jobs, pods = jobs_and_pods(phase="Pending", ready=False, node=None)
    status = {"replicatedJobsStatus": [{"name": "leader", "active": 1, "ready": 0},
                                       {"name": "worker", "active": 2, "ready": 0}]}
    view = resolve(jobset_definition, jobset(status=status), objects=jobs, pods=pods)
    gpu = view.gpu.to_dict()
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (12, 12, 0)
    assert view.phase is Phase.INITIALIZING
    assert {p.reason for p in view.all_pods()} == {"Unschedulable"}


def test_terminated_pods_are_listed_but_hold_nothing(jobset_definition: Definition) -> None:
    jobs, pods = jobs_and_pods(phase="Succeeded", ready=False)
    status = {"conditions": [{"type": "Completed", "status": "True"}], "replicatedJobsStatus": []}
    view = resolve(jobset_definition, jobset(status=status), objects=jobs, pods=pods)
    assert len(view.all_pods()) == 3 and view.replicas.current == 0
    assert view.gpu.to_dict()["requestedByPods"] == 0 and view.gpu.to_dict()["requestedBySpec"] == 12
    assert view.phase is Phase.COMPLETED


def test_pods_outside_the_owner_chain_are_ignored_and_unclaimed_ones_listed(jobset_definition: Definition) -> None:
    jobs, pods = jobs_and_pods()
    stranger = copy.deepcopy(pods[0])
    stranger["metadata"].update(name="other", uid="uid-other", ownerReferences=[{"uid": "uid-elsewhere",
                                                                                 "controller": True}])
    unlabeled = copy.deepcopy(pods[0])
    unlabeled["metadata"].update(name="no-label", uid="uid-no-label", labels={})
    ghost = copy.deepcopy(pods[0])
    ghost["metadata"].update(name="ghost", uid="uid-ghost",
                             labels={"jobset.sigs.k8s.io/replicatedjob-name": "evaluator"})
    view = resolve(jobset_definition, jobset(status=RUNNING_STATUS), objects=jobs,
                   pods=[*pods, stranger, unlabeled, ghost])
    assert sorted(p.name for p in view.unattributed) == ["ghost", "no-label"]
    reasons = {p.name: p.unattributed_reason for p in view.unattributed}
    assert reasons["no-label"] == "no component selector matched the pod"
    assert reasons["ghost"] == ('component replicatedjob: could not match instance id "evaluator". existing '
                                "instance ids ['leader', 'worker']")
    # unattributed pods still belong to the workload: 5 live pods x 4 GPUs
    assert view.gpu.to_dict()["requestedByPods"] == 20 and view.replicas.current == 5


def _definition(child: dict[str, Any], status: dict[str, Any] | None = None) -> Definition:
    return load_definition({
        "apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "demo"},
        "spec": {"structureDefinition": {
            "rootComponent": {"name": "root", "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
                              "statusDefinition": status or {"phaseDefinition": {"path": ".status.phase"},
                                                             "statusMappings": {"running": [{"byPhase": "Up"}]}}},
            "childComponents": [{"name": "worker", "ownerRef": "root", **child}]}}})


DEMO = {"apiVersion": "example.com/v1", "kind": "Demo", "metadata": {"name": "d", "namespace": "n", "uid": "u"},
        "spec": {"groups": [{"name": "a", "replicas": "3", "gpus": 1}, {"name": "b", "replicas": 2, "gpus": 2}]},
        "status": {"phase": "Up"}}


def test_numeric_strings_are_replicas_and_bad_values_are_component_errors() -> None:
    template = {"podTemplateSpecPath": ".spec.groups[] | {spec: {containers: [{name: \"c\", resources: "
                                       "{limits: {\"nvidia.com/gpu\": .gpus}}}]}}"}
    good = _definition({"instanceIdPath": ".spec.groups[].name", "specDefinition": template,
                        "scaleDefinition": {"replicasPath": ".spec.groups[].replicas"},
                        "podSelector": {"componentInstanceSelector": {"idPath": ".metadata.labels.g"}}})
    view = resolve(good, DEMO)
    # a: "3" replicas x 1 GPU + b: 2 x 2 GPUs = 7
    assert [(r.name, r.replicas.desired) for r in view.roles()] == [("a", 3), ("b", 2)]
    assert view.gpu.to_dict()["requestedBySpec"] == 7
    bad = copy.deepcopy(DEMO)
    bad["spec"]["groups"][0]["replicas"] = "three"
    broken = resolve(good, bad)
    worker = broken.components[0]
    assert worker.errors[0].message == "value 'three' at position 0 is not a number"
    assert worker.errors[0].field.endswith("scaleDefinition.replicasPath")
    # issue 28: a value that is not a count makes the phase Undefined (never Running); the
    # view is still produced (the component with the bad column wants 0 pods, not a guess)
    assert broken.phase is Phase.UNDEFINED
    assert [(r.name, r.replicas.desired) for r in broken.roles()] == [("worker", 0)]


def test_instance_count_mismatch_is_an_error_of_that_component_only() -> None:
    definition = _definition({"instanceIdPath": ".spec.groups[].name",
                              "specDefinition": {"podTemplateSpecPath": ".spec.template"},
                              "podSelector": {"componentInstanceSelector": {"idPath": ".metadata.labels.g"}}})
    view = resolve(definition, DEMO)
    assert view.components[0].errors[0].message == "instance ids count (2) does not match results count (1)"
    assert view.phase is Phase.RUNNING and view.errors == []


def test_status_semantics_or_across_and_within_expression_tostring_and_precedence() -> None:
    status = {"conditionsDefinition": {"path": ".status.conditions", "typeFieldName": "kind"},
              "phaseDefinition": {"path": ".status.phase"},
              "statusMappings": {
                  "running": [{"byPhase": "Up", "byConditions": [{"type": "Ready", "status": "True"}]},
                              {"byPhase": "Serving"}],
                  "degraded": [{"byExpression": {"expression": ".status.ready < .status.want",
                                                 "expectedResult": "true"}}],
                  "failed": [{"byExpression": {"expression": ".status.errors", "expectedResult": "2"}}]}}
    definition = _definition({}, status)
    obj = copy.deepcopy(DEMO)
    obj["status"] = {"phase": "Up", "conditions": [{"kind": "Ready", "status": "True"}], "ready": 1, "want": 2,
                     "errors": 2.0}
    view = resolve(definition, obj)
    # Entries order: Running, Failed, ..., Degraded; headline: Failed beats everything
    assert view.phases == [Phase.RUNNING, Phase.FAILED, Phase.DEGRADED]
    assert view.phase is Phase.FAILED
    assert view.conditions == [{"type": "Ready", "status": "True"}]
    obj["status"] = {"phase": "Up", "conditions": [{"kind": "Ready", "status": "False"}]}
    assert resolve(definition, obj).phases == [Phase.UNDEFINED]  # AND inside the first matcher fails
    obj["status"] = {"phase": "Serving"}
    assert resolve(definition, obj).phases == [Phase.RUNNING]  # OR: the second matcher


def test_a_jq_error_in_status_is_reported_and_the_rest_resolves() -> None:
    status = {"statusMappings": {"running": [{"byExpression": {"expression": ".status.n * .status.m",
                                                              "expectedResult": "4"}}]}}
    view = resolve(_definition({}, status), {**DEMO, "status": {"n": 2}})
    assert view.phases == [Phase.UNDEFINED]
    assert "cannot be multiplied" in view.errors[0].message


def test_fixture_module_is_importable_for_other_tests() -> None:
    assert Path(__file__).with_name("jobset_objects.py").exists()


def test_owner_chain_through_a_pod_is_followed() -> None:
    # LeaderWorkerSet: worker pod -> worker StatefulSet -> leader pod -> leader StatefulSet -> LWS
    from workload_map.resolution.pods import workload_pods

    def obj(kind: str, uid: str, owner: str) -> dict[str, Any]:
        return {"apiVersion": "v1" if kind == "Pod" else "apps/v1", "kind": kind,
                "metadata": {"name": uid, "uid": uid, "ownerReferences": [{"uid": owner, "controller": True}]}}
    root = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"uid": "lws"}}
    leader_sts, worker_sts = obj("StatefulSet", "leader-sts", "lws"), obj("StatefulSet", "worker-sts", "leader-0")
    leader, worker = obj("Pod", "leader-0", "leader-sts"), obj("Pod", "worker-0-1", "worker-sts")
    found = workload_pods(root, [leader_sts, worker_sts], [leader, worker])
    assert [p["metadata"]["uid"] for p in found] == ["leader-0", "worker-0-1"]


@pytest.mark.parametrize(("replicas", "message"), [
    (-3, "value -3 at position 0 is out of range 0..2147483647"),
    (10**12, "value 1000000000000 at position 0 is out of range 0..2147483647"),
    # jq reads an infinity as +-1.7976931348623157e+308 (and NaN as null: no count), the pure path too
    (float("inf"), "value 1.7976931348623157e+308 at position 0 is out of range 0..2147483647"),
    ("\uff14", "value '\uff14' at position 0 is not a number"),
])
def test_bad_replica_counts_are_component_errors(replicas: object, message: str) -> None:
    definition = _definition({"specDefinition": {"podSpecPath": ".spec.pod"},
                              "scaleDefinition": {"replicasPath": ".spec.count"}})
    obj = {**DEMO, "spec": {"count": replicas, "pod": {"containers": [{"name": "c"}]}}}
    view = resolve(definition, obj)
    assert view.components[0].errors[0].message == message
    assert view.phase is Phase.UNDEFINED  # issue 28: a count that is not a count is never Running
