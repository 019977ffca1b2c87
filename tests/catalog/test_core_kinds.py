"""Core Kubernetes kinds (Deployment, StatefulSet, ReplicaSet, Job, CronJob, Pod): expected views,
worked out by hand from the Kubernetes API docs.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case

DEPLOYMENT = [
    # replicas 2 x 1 GPU; both pods being created on nodes -> Initializing.
    Case("initializing", "Initializing", ("Initializing",), {"deployment": (2, 2, 0)}, {"deployment": [""]},
         (2, 2, 0), (2, 2, 2)),
    Case("running", "Running", ("Running",), {"deployment": (3, 3, 3)}, {"deployment": [""]}, (3, 3, 3), (3, 3, 3)),
    # 2 of 3 ready after a completed rollout -> Degraded.
    Case("degraded", "Degraded", ("Degraded",), {"deployment": (3, 3, 2)}, {"deployment": [""]}, (3, 3, 2),
         (3, 3, 3)),
    # Progressing=False/ProgressDeadlineExceeded: recoverable -> Degraded (not Failed).
    Case("progress-deadline-exceeded", "Degraded", ("Degraded",), {"deployment": (1, 1, 0)}, {"deployment": [""]},
         (1, 1, 0), (1, 1, 1)),
]

STATEFULSET = [
    # replicas 3 x 2 GPUs = 6; OrderedReady: only pod 0 exists (not ready) -> 2 GPUs live.
    Case("initializing", "Initializing", ("Initializing",), {"statefulset": (3, 1, 0)}, {"statefulset": [""]},
         (3, 1, 0), (6, 2, 2)),
    Case("running", "Running", ("Running",), {"statefulset": (3, 3, 3)}, {"statefulset": [""]}, (3, 3, 3),
         (6, 6, 6)),
    Case("degraded", "Degraded", ("Degraded",), {"statefulset": (3, 3, 2)}, {"statefulset": [""]}, (3, 3, 2),
         (6, 6, 6)),
]

REPLICASET = [
    # 2 x 1 GPU: one pod being created (on a node), one unschedulable.
    Case("initializing", "Initializing", ("Initializing",), {"replicaset": (2, 2, 0)}, {"replicaset": [""]},
         (2, 2, 0), (2, 2, 1)),
    Case("running", "Running", ("Running",), {"replicaset": (2, 2, 2)}, {"replicaset": [""]}, (2, 2, 2), (2, 2, 2)),
    # wants 3, quota allows 1 -> 1 of 3 ready -> Degraded.
    Case("degraded", "Degraded", ("Degraded",), {"replicaset": (3, 1, 1)}, {"replicaset": [""]}, (3, 1, 1),
         (3, 1, 1)),
]

JOB = [
    # completions 8, parallelism 4 -> min(4, 8) = 4 pods x 1 GPU; 2 on nodes.
    Case("initializing", "Initializing", ("Initializing",), {"job": (4, 4, 0)}, {"job": [""]}, (4, 4, 0), (4, 4, 2)),
    # completions 4, parallelism 2 -> 2; index 0 Succeeded, 2 ready.
    Case("running", "Running", ("Running",), {"job": (2, 2, 2)}, {"job": [""]}, (2, 2, 2), (2, 2, 2)),
    # parallelism 3: 2 ready, 1 Failed (retried), replacement on a node -> Degraded.
    Case("degraded", "Degraded", ("Degraded",), {"job": (3, 3, 2)}, {"job": [""]}, (3, 3, 2), (3, 3, 3)),
    Case("completed", "Completed", ("Completed",), {"job": (2, 0, 0)}, {"job": [""]}, (2, 0, 0), (2, 0, 0)),
    Case("failed", "Failed", ("Failed",), {"job": (1, 0, 0)}, {"job": [""]}, (1, 0, 0), (1, 0, 0)),
    # suspended (queued) Job keeps its demand: min(parallelism 2, completions 2) = 2 pods x 1 GPU
    # = 2 by spec; the controller deleted the active pods, so 0 current, 0 by pods, 0 allocated.
    Case("suspended", "Suspended", ("Suspended",), {"job": (2, 0, 0)}, {"job": [""]}, (2, 0, 0), (2, 0, 0)),
]

CRONJOB = [
    # never scheduled: no active Job -> 0 pods.
    Case("initializing", "Initializing", ("Initializing",), {"job": (0, 0, 0)}, {"job": [""]}, (0, 0, 0), (0, 0, 0)),
    # 1 active Job x min(parallelism 2, completions 2) = 2 pods x 2 GPUs = 4.
    Case("running", "Running", ("Running",), {"job": (2, 2, 2)}, {"job": [""]}, (2, 2, 2), (4, 4, 4)),
    # idle, last run did not succeed.
    Case("degraded", "Degraded", ("Degraded",), {"job": (0, 0, 0)}, {"job": [""]}, (0, 0, 0), (0, 0, 0)),
    Case("suspended", "Suspended", ("Suspended",), {"job": (0, 0, 0)}, {"job": [""]}, (0, 0, 0), (0, 0, 0)),
]

POD = [
    # Pending, unschedulable: 1 GPU requested, none allocated.
    Case("initializing", "Initializing", ("Initializing",), {"pod": (1, 1, 0)}, {"pod": [""]}, (1, 1, 0), (1, 1, 0)),
    Case("running", "Running", ("Running",), {"pod": (1, 1, 1)}, {"pod": [""]}, (1, 1, 1), (1, 1, 1)),
    # terminated pods are listed but not counted as current.
    Case("completed", "Completed", ("Completed",), {"pod": (1, 0, 0)}, {"pod": [""]}, (1, 0, 0), (1, 0, 0)),
    Case("failed", "Failed", ("Failed",), {"pod": (1, 0, 0)}, {"pod": [""]}, (1, 0, 0), (1, 0, 0)),
]


@pytest.mark.parametrize("case", DEPLOYMENT, ids=lambda c: c.state)
def test_deployment(case: Case) -> None:
    assert_case("apps-deployment-v1", case)


@pytest.mark.parametrize("case", STATEFULSET, ids=lambda c: c.state)
def test_statefulset(case: Case) -> None:
    assert_case("apps-statefulset-v1", case)


@pytest.mark.parametrize("case", REPLICASET, ids=lambda c: c.state)
def test_replicaset(case: Case) -> None:
    assert_case("apps-replicaset-v1", case)


@pytest.mark.parametrize("case", JOB, ids=lambda c: c.state)
def test_job(case: Case) -> None:
    assert_case("batch-job-v1", case)


@pytest.mark.parametrize("case", CRONJOB, ids=lambda c: c.state)
def test_cronjob(case: Case) -> None:
    assert_case("batch-cronjob-v1", case)


@pytest.mark.parametrize("case", POD, ids=lambda c: c.state)
def test_pod(case: Case) -> None:
    assert_case("core-pod-v1", case)
