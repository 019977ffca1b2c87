"""Status rules are mutually exclusive: over grids of status values each definition matches
exactly one status (never two, and never none for the values the operator really writes).

The definitions whose phase is derived by one decision ladder are exclusive by construction;
they are included to check that no combination makes the ladder fail at runtime.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from workload_map.jq import Document
from workload_map.resolution.status import evaluate_status
from tests.catalog.support import definition


def phases(slug: str, obj: dict[str, Any]) -> list[str]:
    status = definition(slug).root.status
    assert status is not None
    return [p.value for p in evaluate_status(status, Document(obj)).phases]


def cond(kind: str, status: str | None, reason: str = "R") -> list[dict[str, str]]:
    return [] if status is None else [{"type": kind, "status": status, "reason": reason, "message": ""}]


def exactly_one(slug: str, objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        got = phases(slug, obj)
        assert len(got) == 1 and got != ["Undefined"], (obj, got)


def test_raycluster() -> None:
    objs = []
    for suspend, state, head in itertools.product((None, False, True), (None, "", "ready", "suspended", "failed"),
                                                  (None, "True", "False")):
        objs.append({"spec": {} if suspend is None else {"suspend": suspend},
                     "status": {**({"state": state} if state is not None else {}),
                                "conditions": cond("HeadPodReady", head)}})
    exactly_one("ray-io-raycluster-v1", objs)


def test_rayjob() -> None:
    deployment = (None, "", "New", "Initializing", "Waiting", "Running", "Complete", "Failed", "ValidationFailed",
                  "Suspending", "Suspended", "Retrying")
    job = (None, "", "PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED")
    objs = [{"spec": {"suspend": s}, "status": {k: v for k, v in (("jobDeploymentStatus", d), ("jobStatus", j))
                                                   if v is not None}}
            for s, d, j in itertools.product((False, True), deployment, job)]
    exactly_one("ray-io-rayjob-v1", objs)


@pytest.mark.parametrize("slug", ["kubeflow-org-pytorchjob-v1", "kubeflow-org-mpijob-v2beta1"])
def test_training_jobs(slug: str) -> None:
    kinds = ("Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended")
    objs = []
    for suspend in (False, True):
        for statuses in itertools.product((None, "True", "False"), repeat=len(kinds)):
            conditions = [c for kind, st in zip(kinds, statuses) for c in cond(kind, st)]
            objs.append({"spec": {"runPolicy": {"suspend": suspend}}, "status": {"conditions": conditions}})
    exactly_one(slug, objs)


def test_rayservice() -> None:
    ready_reasons = ("Initializing", "InitializingTimeout", "ValidationFailed", "ZeroServeEndpoints",
                     "NonZeroServeEndpoints", "SuspendInProgress", "SuspendComplete")
    objs = []
    for suspend, ready, reason, suspending, suspended, sreason in itertools.product(
            (False, True), (None, "True", "False"), ready_reasons, (None, "True", "False"), (None, "True", "False"),
            ("SuspendComplete", "RayServiceResumed")):
        conditions = (cond("Ready", ready, reason) + cond("Suspending", suspending)
                      + cond("Suspended", suspended, sreason))
        objs.append({"spec": {"suspend": suspend}, "status": {"conditions": conditions}})
    exactly_one("ray-io-rayservice-v1", objs)


def test_knative_service() -> None:
    objs = [{"status": {"conditions": cond("Ready", ready),
                        **({"latestReadyRevisionName": "svc-00001"} if latest else {})}}
            for ready, latest in itertools.product((None, "True", "False", "Unknown"), (False, True))]
    exactly_one("serving-knative-dev-service-v1", objs)


def test_inferenceservice() -> None:
    objs = []
    for stop, stopped, ready, transition in itertools.product(
            (None, "true", "false"), (None, "True", "False"), (None, "True", "False", "Unknown"),
            (None, "UpToDate", "InProgress", "BlockedByFailedLoad", "InvalidSpec")):
        obj: dict[str, Any] = {"metadata": {"annotations": {"serving.kserve.io/stop": stop}} if stop else {},
                               "status": {"conditions": cond("Stopped", stopped) + cond("Ready", ready)}}
        if transition:
            obj["status"]["modelStatus"] = {"transitionStatus": transition}
        objs.append(obj)
    exactly_one("serving-kserve-io-inferenceservice-v1beta1", objs)


@pytest.mark.parametrize(("slug", "field", "values"), [
    ("apps-nvidia-com-nimservice-v1alpha1", "state", (None, "", "Pending", "NotReady", "Ready", "Failed")),
    ("apps-nvidia-com-nimcache-v1alpha1", "state", (None, "", "NotReady", "PVC-Created", "Started", "Pending",
                                                    "InProgress", "Ready", "Failed")),
    ("nvidia-com-dynamographdeployment-v1alpha1", "state", (None, "initializing", "pending", "successful", "failed")),
    ("core-pod-v1", "phase", (None, "Pending", "Running", "Succeeded", "Failed")),
])
def test_state_fields(slug: str, field: str, values: tuple[Any, ...]) -> None:
    exactly_one(slug, [{"status": {field: v} if v is not None else {}} for v in values])


def test_milvus() -> None:
    objs = []
    for status, replicas, reason in itertools.product(("Pending", "Healthy", "Unhealthy", "Stopped", None),
                                                       (None, 0, 1), ("MilvusStopping", "MilvusStopped")):
        spec = {"mode": "standalone", "components": {"standalone": {} if replicas is None else {"replicas": replicas}}}
        objs.append({"spec": spec, "status": {**({"status": status} if status else {}),
                                              "conditions": cond("MilvusReady", "False", reason)}})
    exactly_one("milvus-io-milvus-v1beta1", objs)


@pytest.mark.parametrize("slug", ["batch-job-v1", "leaderworkerset-x-k8s-io-leaderworkerset-v1",
                                  "apps-deployment-v1"])
def test_condition_ladders(slug: str) -> None:
    kinds = {"batch-job-v1": ("Complete", "SuccessCriteriaMet", "Failed", "FailureTarget", "Suspended"),
             "leaderworkerset-x-k8s-io-leaderworkerset-v1": ("Available", "Progressing", "UpdateInProgress"),
             "apps-deployment-v1": ("Available", "Progressing")}[slug]
    objs = []
    for statuses in itertools.product((None, "True", "False"), repeat=len(kinds)):
        for ready, suspend in itertools.product((0, 1, 3), (False, True)):
            conditions = [c for kind, st in zip(kinds, statuses) for c in cond(kind, st)]
            objs.append({"spec": {"replicas": 3, "suspend": suspend},
                         "status": {"conditions": conditions, "readyReplicas": ready, "ready": ready,
                                    "failed": ready % 2}})
    exactly_one(slug, objs)
