"""AppWrapper (workload.codeflare.dev/v1beta2): expected views of the fixture states, worked out by hand.

Rules used (AppWrapper v1.1): desired pods = the sum of the podSets' replicas (status
componentStatus, else spec) while nothing is deployed (the ``pods`` stand-in component); once
the wrapped resource exists it is a nested child (``workload-map.run.ai/nested``): its roles,
desired pods and spec-side GPUs are read through its own definition (PyTorchJob master/worker,
Job), its pods counted once under the AppWrapper.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service import WorkloadService
from tests.catalog.support import FIXTURES, Case, assert_case, catalog

SLUG = "workload-codeflare-dev-appwrapper-v1beta2"
IDS = {"pods": [""]}

CASES = [
    # Changed on purpose with nesting (was roles {pods: 3/3/3}, gpu (0, 6, 6)): the wrapped
    # PyTorchJob read through its definition: master 1 x 2 GPUs + worker 2 x 2 GPUs = 6 by spec;
    # its 3 pods x 2 GPUs = 6 by pods, all on nodes = 6 allocated.
    Case("running", "Running", ("Running",), {"master": (1, 1, 1), "worker": (2, 2, 2)},
         {"master": [""], "worker": [""]}, (3, 3, 3), (6, 6, 6)),
    # queued: nothing deployed (no nested child), the stand-in keeps the demand (3 pods; spec 0).
    Case("suspended", "Suspended", ("Suspended",), {"pods": (3, 0, 0)}, IDS, (3, 0, 0), (0, 0, 0)),
    # Changed on purpose (was {pods: 2/0/0}, gpu (0, 0, 0)): the wrapped Job read through the Job
    # definition: parallelism 2 x 1 GPU = 2 by spec; both pods Succeeded, nothing held.
    Case("succeeded", "Completed", ("Completed",), {"job": (2, 0, 0)}, {"job": [""]}, (2, 0, 0), (2, 0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


def test_the_wrapped_pytorchjob_is_not_a_workload_of_its_own() -> None:
    reader = SnapshotReader.from_paths(Path(FIXTURES / SLUG / "running.yaml"))
    views = WorkloadService(DefinitionRegistry(catalog()), reader).workloads()
    assert [(v.kind, v.name) for v in views] == [("AppWrapper", "fms-tune")]
    # 3 pods x 2 GPUs, counted once (not again under the PyTorchJob)
    assert views[0].to_dict()["gpu"]["requestedByPods"] == 6
