"""DynamoGraphDeployment (nvidia.com/v1alpha1): expected views, worked out by hand.

Rules used (Dynamo 1.1.0): one role per service (map key); pods = replicas (default 1) x
multinode.nodeCount (when multinode); Dynamo's resources format {gpu: "1"} means nvidia.com/gpu
(unless gpuType says otherwise), per pod.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case

SLUG = "nvidia-com-dynamographdeployment-v1alpha1"

CASES = [
    # Frontend 1 (CPU) + VllmDecodeWorker 1 x 1 GPU; state pending -> Initializing.
    Case("initializing", "Initializing", ("Initializing",), {"Frontend": (1, 1, 1), "VllmDecodeWorker": (1, 1, 0)},
         {"service": ["Frontend", "VllmDecodeWorker"]}, (2, 2, 1), (1, 1, 1)),
    # Frontend 1 + decode 2 + prefill 2, 1 GPU per worker pod: 5 pods, 4 GPUs.
    Case("running", "Running", ("Running",),
         {"Frontend": (1, 1, 1), "VllmDecodeWorker": (2, 2, 2), "VllmPrefillWorker": (2, 2, 2)},
         {"service": ["Frontend", "VllmDecodeWorker", "VllmPrefillWorker"]}, (5, 5, 5), (4, 4, 4)),
    # TrtllmWorker 1 replica x nodeCount 2 = 2 pods x 8 GPUs = 16.
    Case("running-multinode", "Running", ("Running",), {"Frontend": (1, 1, 1), "TrtllmWorker": (2, 2, 2)},
         {"service": ["Frontend", "TrtllmWorker"]}, (3, 3, 3), (16, 16, 16)),
    # state failed.
    Case("failed", "Failed", ("Failed",), {"Frontend": (1, 1, 1), "VllmDecodeWorker": (1, 1, 0)},
         {"service": ["Frontend", "VllmDecodeWorker"]}, (2, 2, 1), (1, 1, 1)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)
