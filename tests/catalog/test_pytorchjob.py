"""PyTorchJob (kubeflow.org/v1): expected views of the fixture states, worked out by hand.

Rules used (Training Operator v1.9): a replica type's pods = its replicas, 1 when the replica
spec exists without a count, 0 when the replica type is not in the spec; pods are labelled
training.kubeflow.org/replica-type=master|worker. GPUs in the fixtures are given in limits only
(the API server copies them to the pods' requests; the spec side falls back to limits).
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

SLUG = "kubeflow-org-pytorchjob-v1"
ONE = {"master": [""], "worker": [""]}

CASES = [
    # Master 1 + Worker 3, 2 GPUs each: desired 4 pods, 4 x 2 = 8 GPUs. Only Created=True ->
    # Initializing. 4 live pods (8 GPUs); 3 are on nodes (master, worker-0, worker-1) -> 6.
    Case("initializing", "Initializing", ("Initializing",), {"master": (1, 1, 0), "worker": (3, 3, 0)}, ONE,
         (4, 4, 0), (8, 8, 6)),
    # Created and Running True (Created stays True; ours is not also Initializing).
    Case("running", "Running", ("Running",), {"master": (1, 1, 1), "worker": (3, 3, 3)}, ONE, (4, 4, 4), (8, 8, 8)),
    # Master-only job: no Worker spec -> 0 workers (not 1); 1 pod x 8 GPUs.
    Case("running-master-only", "Running", ("Running",), {"master": (1, 1, 1), "worker": (0, 0, 0)}, ONE,
         (1, 1, 1), (8, 8, 8)),
    # Restarting=True replaced Running -> Degraded. Worker spec without replicas -> 1:
    # 1 + 1 = 2 pods x 2 GPUs = 4; the worker's replacement pod is on a node, not ready.
    Case("restarting", "Degraded", ("Degraded",), {"master": (1, 1, 1), "worker": (1, 1, 0)}, ONE, (2, 2, 1),
         (4, 4, 4)),
    # Succeeded=True (Running False): all 4 pods Succeeded -> none live.
    Case("completed", "Completed", ("Completed",), {"master": (1, 0, 0), "worker": (3, 0, 0)}, ONE, (4, 0, 0),
         (8, 0, 0)),
    # Failed=True: all pods Failed.
    Case("failed", "Failed", ("Failed",), {"master": (1, 0, 0), "worker": (3, 0, 0)}, ONE, (4, 0, 0), (8, 0, 0)),
    # runPolicy.suspend true + Suspended=True: the operator deletes the pods; demand kept:
    # master 1 + worker 3 = 4 pods x 2 GPUs = 8 by spec; 0 by pods, 0 allocated.
    Case("suspended", "Suspended", ("Suspended",), {"master": (1, 0, 0), "worker": (3, 0, 0)}, ONE, (4, 0, 0),
         (8, 0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


def test_elastic_bounds_follow_the_operator_defaults() -> None:
    # elasticPolicy minReplicas 1, maxReplicas 4 on a Worker without a count (1 pod).
    worker = next(r for r in resolve_fixture(SLUG, "restarting").roles() if r.name == "worker")
    assert (worker.replicas.desired, worker.replicas.min, worker.replicas.max) == (1, 1, 4)


def test_gang_is_master_plus_workers() -> None:
    (gang,) = resolve_fixture(SLUG, "running").gangs
    assert (gang.min_member, gang.sub_groups) == (4, [("master", 1), ("worker", 3)])
