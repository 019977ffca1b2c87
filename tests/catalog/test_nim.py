"""NIMService and NIMCache (apps.nvidia.com/v1alpha1): expected views, worked out by hand.

Rules used (NIM Operator v3.1.2): NIMService pods = hpa.minReplicas when autoscaling is enabled,
else replicas (default 1), times the pipeline parallelism of a multi-node service; every pod
gets spec.resources. NIMCache runs one caching Job pod with requests = limits =
spec.resources (cpu, memory; no GPU).
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case

SVC, CACHE = "apps-nvidia-com-nimservice-v1alpha1", "apps-nvidia-com-nimcache-v1alpha1"

SERVICE = [
    # state NotReady; 1 replica x 1 GPU, pod being created on a node.
    Case("initializing", "Initializing", ("Initializing",), {"nimservice": (1, 1, 0)}, {"nimservice": [""]},
         (1, 1, 0), (1, 1, 1)),
    # 2 replicas x 4 GPUs = 8.
    Case("running", "Running", ("Running",), {"nimservice": (2, 2, 2)}, {"nimservice": [""]}, (2, 2, 2), (8, 8, 8)),
    # autoscaling on (no spec.replicas): the template says hpa.minReplicas 2, but the HPA scaled
    # the live Deployment to 3 (live-scale rule): desired 3 x 1 GPU = 3 by spec; 3 pods run.
    Case("running-autoscaled", "Running", ("Running",), {"nimservice": (3, 3, 3)}, {"nimservice": [""]},
         (3, 3, 3), (3, 3, 3)),
    # multi-node: 1 replica x pipeline 2 = 2 pods x 8 GPUs = 16.
    Case("running-multinode", "Running", ("Running",), {"nimservice": (2, 2, 2)}, {"nimservice": [""]},
         (2, 2, 2), (16, 16, 16)),
    # state Failed, no Deployment: the spec still wants 1 pod with 1 GPU.
    Case("failed", "Failed", ("Failed",), {"nimservice": (1, 0, 0)}, {"nimservice": [""]}, (1, 0, 0), (1, 0, 0)),
]

CACHING = [
    # state Pending: the caching pod is not scheduled.
    Case("initializing", "Initializing", ("Initializing",), {"job": (1, 1, 0)}, {"job": [""]}, (1, 1, 0), (0, 0, 0)),
    # state InProgress -> Running.
    Case("running", "Running", ("Running",), {"job": (1, 1, 1)}, {"job": [""]}, (1, 1, 1), (0, 0, 0)),
    # state Ready -> Completed (only Completed, although NIM_CACHE_JOB_CREATED stays True).
    Case("completed", "Completed", ("Completed",), {"job": (1, 0, 0)}, {"job": [""]}, (1, 0, 0), (0, 0, 0)),
    Case("failed", "Failed", ("Failed",), {"job": (1, 0, 0)}, {"job": [""]}, (1, 0, 0), (0, 0, 0)),
]


@pytest.mark.parametrize("case", SERVICE, ids=lambda c: c.state)
def test_nimservice(case: Case) -> None:
    assert_case(SVC, case)


@pytest.mark.parametrize("case", CACHING, ids=lambda c: c.state)
def test_nimcache(case: Case) -> None:
    view = assert_case(CACHE, case)
    # requests = limits = spec.resources: 4 CPUs, 16Gi
    job = view.roles()[0]
    assert job.to_dict()["podResources"]["cpuMillis"] == 4000
    assert job.to_dict()["podResources"]["memoryBytes"] == 16 * 1024**3
