"""Terminating pods (issue 13 item 4): not current replicas, still holding their GPUs."""

from __future__ import annotations

import pytest

from workload_map.paths import REPO_ROOT
from workload_map.definitions import load_definition
from workload_map.definitions.model import Definition
from workload_map.resolution import resolve
from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset


@pytest.fixture(scope="module")
def jobset_definition() -> Definition:
    return load_definition((REPO_ROOT / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())


def test_a_terminating_pod_is_not_a_replica_but_still_holds_its_gpus(jobset_definition: Definition) -> None:
    jobs, pods = jobs_and_pods()
    pods[2]["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"  # worker-1, still Running on gpu-node-1
    view = resolve(jobset_definition, jobset(status=RUNNING_STATUS), objects=jobs, pods=pods)
    # current: 3 pods - 1 terminating = 2 (both Ready); worker role: 2 desired, 1 current
    assert (view.replicas.desired, view.replicas.current, view.replicas.ready) == (3, 2, 2)
    assert [(r.name, r.replicas.current) for r in view.roles()] == [("leader", 1), ("worker", 1)]
    # GPUs: 3 pods x 4 = 12 by pods and allocated (the terminating pod's 4 are not free yet)
    gpu = view.gpu.to_dict()
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (12, 12, 12)
    worker = view.roles()[1].gpu.to_dict()
    assert (worker["requestedByPods"], worker["allocated"]) == (8, 8)  # 2 worker pods x 4
    rows = {p.name: p.to_dict() for p in view.all_pods()}
    assert rows["train-worker-1-0-abcde"]["terminating"] is True
    assert "terminating" not in rows["train-leader-0-0-abcde"]


def test_a_deleted_pod_that_already_terminated_holds_nothing(jobset_definition: Definition) -> None:
    jobs, pods = jobs_and_pods()
    pods[0]["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    pods[0]["status"]["phase"] = "Failed"
    pods[1]["status"]["phase"] = "Succeeded"
    view = resolve(jobset_definition, jobset(status=RUNNING_STATUS), objects=jobs, pods=pods)
    # only worker-1 remains: 1 current pod, 4 GPUs by pods and allocated; terminated pods are not "terminating"
    assert view.replicas.current == 1
    gpu = view.gpu.to_dict()
    assert (gpu["requestedByPods"], gpu["allocated"]) == (4, 4)
    assert not any(p.terminating for p in view.all_pods())


def test_an_unscheduled_terminating_pod_is_requested_but_not_allocated(jobset_definition: Definition) -> None:
    jobs, pods = jobs_and_pods(phase="Pending", ready=False, node=None)
    for pod in pods:
        pod["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z"
    view = resolve(jobset_definition, jobset(status=RUNNING_STATUS), objects=jobs, pods=pods)
    # 3 pending pods being deleted: 0 current, 12 requested by pods, 0 allocated (no node)
    assert view.replicas.current == 0
    gpu = view.gpu.to_dict()
    assert (gpu["requestedByPods"], gpu["allocated"]) == (12, 0)
