"""AppWrapper (workload.codeflare.dev/v1beta2): expected views of the fixture states, worked out by hand.

Rules used (AppWrapper v1.1): desired pods = the sum of the podSets' replicas (status
componentStatus, else spec); pods are those of the wrapped resources (label
workload.codeflare.dev/appwrapper); the spec-side GPUs are not readable per podSet (0), the pods'
GPUs are counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from server.definitions.registry import DefinitionRegistry
from server.kube.snapshot import SnapshotReader
from server.service import WorkloadService
from tests.catalog.support import FIXTURES, Case, assert_case, catalog

SLUG = "workload-codeflare-dev-appwrapper-v1beta2"
IDS = {"pods": [""]}

CASES = [
    # podSets Master 1 + Worker 2 = 3 pods; the PyTorchJob's 3 pods x 2 GPUs = 6 by pods, all on nodes.
    Case("running", "Running", ("Running",), {"pods": (3, 3, 3)}, IDS, (3, 3, 3), (0, 6, 6)),
    # queued: nothing deployed, the demand (3 pods) stays.
    Case("suspended", "Suspended", ("Suspended",), {"pods": (3, 0, 0)}, IDS, (3, 0, 0), (0, 0, 0)),
    # inferred podSet of the Job: replicas 2; both pods Succeeded.
    Case("succeeded", "Completed", ("Completed",), {"pods": (2, 0, 0)}, IDS, (2, 0, 0), (0, 0, 0)),
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
