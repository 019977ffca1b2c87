"""DynamoGraphDeployment (nvidia.com/v1beta1): expected views, worked out by hand.

Rules used (Dynamo 1.1.0, v1beta1 API): one role per entry of spec.components (its name); pods =
replicas (default 1) x multinode.nodeCount (CRD default 2 when `multinode` is given); GPUs are the
pod template's Kubernetes resources, summed over all its containers, per pod.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case

SLUG = "nvidia-com-dynamographdeployment-v1beta1"

CASES = [
    # frontend 1 x 0 + decode 2 x 1 + prefill 1 x (main 2 + kv-offload sidecar 1) = 2 + 3 = 5 GPUs, 4 pods.
    Case("running", "Running", ("Running",), {"frontend": (1, 1, 1), "decode": (2, 2, 2), "prefill": (1, 1, 1)},
         {"component": ["frontend", "decode", "prefill"]}, (4, 4, 4), (5, 5, 5)),
    # state pending: decode pods 2 x 1 GPU live; only the starting one is on a node -> 1 allocated.
    Case("pending", "Initializing", ("Initializing",), {"frontend": (1, 1, 1), "decode": (2, 2, 0)},
         {"component": ["frontend", "decode"]}, (3, 3, 1), (2, 2, 1)),
    # state failed: both decode pods on nodes, crash-looping (not ready): 2 GPUs allocated.
    Case("failed", "Failed", ("Failed",), {"frontend": (1, 1, 1), "decode": (2, 2, 0)},
         {"component": ["frontend", "decode"]}, (3, 3, 1), (2, 2, 2)),
    # no status yet -> Initializing; worker `multinode: {}` -> 1 replica x 2 nodes x 8 GPUs = 16.
    Case("submitted-multinode", "Initializing", ("Initializing",), {"frontend": (1, 0, 0), "worker": (2, 0, 0)},
         {"component": ["frontend", "worker"]}, (3, 0, 0), (16, 0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)
