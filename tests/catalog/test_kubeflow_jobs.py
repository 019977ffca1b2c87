"""TFJob, XGBoostJob, PaddleJob and JAXJob (kubeflow.org/v1): expected views, worked out by hand.

Rules used (Training Operator v1.9, the same operator and rules as PyTorchJob): a replica type's
pods = its replicas, 1 when the replica spec exists without a count, 0 when the type is not in
the spec; pods carry training.kubeflow.org/replica-type = the type lowercased. GPUs are given in
the templates' limits only (the spec side falls back to limits; the pods have both).
Suspended jobs keep their demand (issue 13): desired = the spec's replicas, no pods exist.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

TF = "kubeflow-org-tfjob-v1"
XGB = "kubeflow-org-xgboostjob-v1"
PADDLE = "kubeflow-org-paddlejob-v1"
JAX = "kubeflow-org-jaxjob-v1"
TF_ONE = {"chief": [""], "ps": [""], "worker": [""], "evaluator": [""]}
TWO = {"master": [""], "worker": [""]}

CASES = [
    # Chief 1 x 1 GPU + PS 2 x 0 + Worker 4 x 2 GPUs = 7 pods, 1 + 0 + 8 = 9 GPUs; all ready.
    (TF, Case("running", "Running", ("Running",),
              {"chief": (1, 1, 1), "ps": (2, 2, 2), "worker": (4, 4, 4), "evaluator": (0, 0, 0)}, TF_ONE,
              (7, 7, 7), (9, 9, 9))),
    # No PS spec -> 0 (not 1); Worker without replicas -> 1: 1 x 1 + 1 x 2 = 3 GPUs.
    (TF, Case("running-no-ps", "Running", ("Running",),
              {"chief": (1, 1, 1), "ps": (0, 0, 0), "worker": (1, 1, 1), "evaluator": (0, 0, 0)}, TF_ONE,
              (2, 2, 2), (3, 3, 3))),
    # Created only. 7 live pods (9 GPUs); ready: the 2 PS pods; on nodes: chief (1) + 2 starting
    # workers (2 x 2) = 5 GPUs allocated (the 2 unschedulable workers have no node).
    (TF, Case("initializing", "Initializing", ("Initializing",),
              {"chief": (1, 1, 0), "ps": (2, 2, 2), "worker": (4, 4, 0), "evaluator": (0, 0, 0)}, TF_ONE,
              (7, 7, 2), (9, 9, 5))),
    # Suspended keeps the demand: 7 pods / 9 GPUs asked for, none exist.
    (TF, Case("suspended", "Suspended", ("Suspended",),
              {"chief": (1, 0, 0), "ps": (2, 0, 0), "worker": (4, 0, 0), "evaluator": (0, 0, 0)}, TF_ONE,
              (7, 0, 0), (9, 0, 0))),
    # Failed=True; the kept pods are all terminated (Failed/Succeeded): nothing current.
    (TF, Case("failed", "Failed", ("Failed",),
              {"chief": (1, 0, 0), "ps": (2, 0, 0), "worker": (4, 0, 0), "evaluator": (0, 0, 0)}, TF_ONE,
              (7, 0, 0), (9, 0, 0))),
    # Master 1 + Worker 3, 1 GPU each = 4 pods, 4 GPUs.
    (XGB, Case("running", "Running", ("Running",), {"master": (1, 1, 1), "worker": (3, 3, 3)}, TWO,
               (4, 4, 4), (4, 4, 4))),
    (XGB, Case("succeeded", "Completed", ("Completed",), {"master": (1, 0, 0), "worker": (3, 0, 0)}, TWO,
               (4, 0, 0), (4, 0, 0))),
    (XGB, Case("suspended", "Suspended", ("Suspended",), {"master": (1, 0, 0), "worker": (3, 0, 0)}, TWO,
               (4, 0, 0), (4, 0, 0))),
    # Restarting=True -> Degraded; the recreated worker is on a node, not ready: ready 3 of 4.
    (XGB, Case("restarting", "Degraded", ("Degraded",), {"master": (1, 1, 1), "worker": (3, 3, 2)}, TWO,
               (4, 4, 3), (4, 4, 4))),
    # Collective mode: Worker 4 x 1 GPU, no Master spec -> 0 masters.
    (PADDLE, Case("running", "Running", ("Running",), {"master": (0, 0, 0), "worker": (4, 4, 4)}, TWO,
                  (4, 4, 4), (4, 4, 4))),
    # 4 live pods (4 GPUs requested by pods); only the starting one is on a node -> 1 allocated.
    (PADDLE, Case("initializing", "Initializing", ("Initializing",), {"master": (0, 0, 0), "worker": (4, 4, 0)},
                  TWO, (4, 4, 0), (4, 4, 1))),
    (PADDLE, Case("failed", "Failed", ("Failed",), {"master": (0, 0, 0), "worker": (4, 0, 0)}, TWO,
                  (4, 0, 0), (4, 0, 0))),
    # 2 workers x 8 GPUs = 16.
    (JAX, Case("running", "Running", ("Running",), {"worker": (2, 2, 2)}, {"worker": [""]}, (2, 2, 2), (16, 16, 16))),
    (JAX, Case("suspended", "Suspended", ("Suspended",), {"worker": (2, 0, 0)}, {"worker": [""]}, (2, 0, 0),
               (16, 0, 0))),
    (JAX, Case("succeeded", "Completed", ("Completed",), {"worker": (2, 0, 0)}, {"worker": [""]}, (2, 0, 0),
               (16, 0, 0))),
    # suspend set, no Suspended condition yet, pods still run -> Suspending.
    (JAX, Case("suspending", "Suspending", ("Suspending",), {"worker": (2, 2, 2)}, {"worker": [""]}, (2, 2, 2),
               (16, 16, 16))),
]


@pytest.mark.parametrize(("slug", "case"), CASES, ids=lambda v: v if isinstance(v, str) else v.state)
def test_view(slug: str, case: Case) -> None:
    assert_case(slug, case)


def test_paddle_elastic_bounds() -> None:
    # elasticPolicy minReplicas 2, maxReplicas 4 on Worker replicas 4.
    worker = next(r for r in resolve_fixture(PADDLE, "running").roles() if r.name == "worker")
    assert (worker.replicas.desired, worker.replicas.min, worker.replicas.max) == (4, 2, 4)


def test_tfjob_gang_is_the_whole_job() -> None:
    # chief 1 + ps 2 + worker 4 (evaluator absent: 0) = 7.
    (gang,) = resolve_fixture(TF, "running").gangs
    assert (gang.min_member, gang.sub_groups) == (7, [("chief", 1), ("ps", 2), ("worker", 4), ("evaluator", 0)])
