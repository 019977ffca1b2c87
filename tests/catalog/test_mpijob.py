"""MPIJob (kubeflow.org/v2beta1): expected views of the fixture states, worked out by hand.

Rules used (MPI Operator v0.8): the launcher is a batch Job (1 pod, replicas default 1); workers
are pods owned by the MPIJob, replicas default **0** (SetDefaults_MPIJob); pods are labelled
training.kubeflow.org/job-role=launcher|worker. Fixtures: launcher without GPU, workers with 8.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

SLUG = "kubeflow-org-mpijob-v2beta1"
ONE = {"launcher": [""], "worker": [""]}

CASES = [
    # Launcher 1 + Worker 2: 3 pods, 2 x 8 = 16 GPUs. Created only -> Initializing.
    # Live pods: launcher (being created), worker-0 running (8), worker-1 pending (8) -> 16;
    # on nodes: worker-0 -> 8.
    Case("initializing", "Initializing", ("Initializing",), {"launcher": (1, 1, 0), "worker": (2, 2, 1)}, ONE,
         (3, 3, 1), (16, 16, 8)),
    Case("running", "Running", ("Running",), {"launcher": (1, 1, 1), "worker": (2, 2, 2)}, ONE, (3, 3, 3),
         (16, 16, 16)),
    # Worker spec without a count: the operator defaults it to 0 -> no worker pods, no GPUs.
    Case("running-worker-count-unset", "Running", ("Running",), {"launcher": (1, 1, 1), "worker": (0, 0, 0)}, ONE,
         (1, 1, 1), (0, 0, 0)),
    # Succeeded: launcher pod Succeeded, workers deleted (cleanPodPolicy Running).
    Case("completed", "Completed", ("Completed",), {"launcher": (1, 0, 0), "worker": (2, 0, 0)}, ONE, (3, 0, 0),
         (16, 0, 0)),
    # Failed (evicted worker): worker-1 Failed, launcher and worker-0 still run -> 8 GPUs live.
    Case("failed", "Failed", ("Failed",), {"launcher": (1, 1, 1), "worker": (2, 1, 1)}, ONE, (3, 2, 2),
         (16, 8, 8)),
    # Suspended (runPolicy.suspend): launcher Job suspended, workers deleted, demand kept:
    # launcher 1 + worker 2 = 3 pods desired; GPUs by spec 2 workers x 8 = 16 (the launcher
    # asks none); no pods: 0 by pods, 0 allocated.
    Case("suspended", "Suspended", ("Suspended",), {"launcher": (1, 0, 0), "worker": (2, 0, 0)}, ONE, (3, 0, 0),
         (16, 0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


def test_launcher_pod_is_reached_through_its_job() -> None:
    view = resolve_fixture(SLUG, "running")
    launcher = next(r for r in view.roles() if r.name == "launcher")
    assert launcher.component.kind == "Job"
    assert [p.name for p in launcher.pods][0].startswith("resnet-mpi-launcher-")
