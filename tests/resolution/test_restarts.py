"""Restarts in flight (issue 13 item 7): a JobSet / Kubeflow job recovering from a failure is Degraded."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from workload_map.definitions import Phase
from workload_map.resolution import resolve
from tests.catalog.support import definition, load, resolve_fixture
from tests.resolution.jobset_objects import jobs_and_pods, jobset

JOBSET = "jobset-x-k8s-io-jobset-v1alpha2"


def _status(restarts: int, leader_ready: int, worker_ready: int) -> dict[str, Any]:
    return {"restarts": restarts, "replicatedJobsStatus": [
        {"name": "leader", "active": 1, "ready": leader_ready, "failed": 0, "succeeded": 0, "suspended": 0},
        {"name": "worker", "active": 2, "ready": worker_ready, "failed": 0, "succeeded": 0, "suspended": 0}]}


def test_a_jobset_restarting_with_pods_of_the_previous_attempt_terminating_is_degraded() -> None:
    jobs, pods = jobs_and_pods()
    # attempt 1: the leader and one worker are ready again; worker-1's new pod is not there yet and
    # the previous attempt's worker-1 pod is still terminating on the node
    old = pods[2]
    old["metadata"].update(deletionTimestamp="2026-12-01T10:00:00Z", name="train-worker-1-0-old")
    view = resolve(definition(JOBSET), jobset(status=_status(1, 1, 1)), objects=jobs, pods=pods)
    # worker has 1 of 2 Jobs ready after a restart -> Degraded (not Running)
    assert view.phase is Phase.DEGRADED and view.phases == [Phase.DEGRADED]
    # current: 3 pods - 1 terminating = 2; the terminating pod still holds its 4 GPUs: 3 x 4 = 12
    assert (view.replicas.desired, view.replicas.current) == (3, 2)
    gpu = view.gpu.to_dict()
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (12, 12, 12)


def test_a_restarted_jobset_with_every_job_ready_again_is_running() -> None:
    jobs, pods = jobs_and_pods()
    view = resolve(definition(JOBSET), jobset(status=_status(2, 1, 2)), objects=jobs, pods=pods)
    assert view.phases == [Phase.RUNNING]


def test_a_restart_with_nothing_ready_yet_is_degraded_not_initializing() -> None:
    view = resolve(definition(JOBSET), jobset(status=_status(1, 0, 0)))
    assert view.phases == [Phase.DEGRADED]
    # without a restart the same status is a JobSet starting for the first time
    assert resolve(definition(JOBSET), jobset(status=_status(0, 0, 0))).phases == [Phase.INITIALIZING]


def test_pytorchjob_restarting_wins_over_a_stale_running_condition() -> None:
    docs = [copy.deepcopy(d) for d in load("kubeflow-org-pytorchjob-v1", "running")]
    conditions = docs[0]["status"]["conditions"]
    conditions.append({"type": "Restarting", "status": "True", "reason": "PyTorchJobRestarting"})
    view = resolve(definition("kubeflow-org-pytorchjob-v1"), docs[0], objects=docs[1:],
                   pods=[d for d in docs[1:] if d.get("kind") == "Pod"])
    assert view.phases == [Phase.DEGRADED]
    assert resolve_fixture("kubeflow-org-pytorchjob-v1", "restarting").phases == [Phase.DEGRADED]


@pytest.mark.parametrize(("running", "phase"), [(False, Phase.DEGRADED), (True, Phase.RUNNING)])
def test_mpijob_retrying_a_failed_launcher_is_degraded_until_running_again(running: bool, phase: Phase) -> None:
    docs = [copy.deepcopy(d) for d in load("kubeflow-org-mpijob-v2beta1", "running")]
    root = docs[0]
    root["status"]["conditions"] = [c for c in root["status"]["conditions"] if c["type"] != "Running"] + (
        [{"type": "Running", "status": "True", "reason": "MPIJobRunning"}] if running else [])
    root["status"].setdefault("replicaStatuses", {}).setdefault("Launcher", {})["failed"] = 1
    view = resolve(definition("kubeflow-org-mpijob-v2beta1"), root, objects=docs[1:],
                   pods=[d for d in docs[1:] if d.get("kind") == "Pod"])
    assert view.phases == [phase]
