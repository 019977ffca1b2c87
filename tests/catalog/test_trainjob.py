"""TrainJob (trainer.kubeflow.org/v1alpha1): expected views of the fixture states, worked out by hand.

Rules used (Trainer v2.1): the TrainJob is rendered with its runtime into one JobSet it owns
(TrainJob -> JobSet -> Job -> Pod). With nesting (``workload-map.run.ai/nested``) that JobSet
is read through the JobSet definition: roles are its replicated jobs (``node``), per-node
resources are what the controller copied in (the TrainJob's resourcesPerNode, else the
runtime's). Before the JobSet exists the ``trainer`` stand-in reads numNodes x
resourcesPerNode from the TrainJob itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from tests.catalog.support import FIXTURES, Case, assert_case, catalog, definition, load, resolve_objects, summary

SLUG = "trainer-kubeflow-org-trainjob-v1alpha1"
JOBSET = "jobset-x-k8s-io-jobset-v1alpha2"
ONE = {"replicatedjob": ["node"]}

# Changed on purpose with nesting: the role was the TrainJob's stand-in ``trainer``; it is now
# the JobSet's replicated job ``node`` (definition jobset-x-k8s-io-jobset-v1alpha2).
CASES = [
    # JobSet node: parallelism 2 x 8 GPUs = 16; both node pods ready (jobsStatus ready 1 -> Running).
    Case("running", "Running", ("Running",), {"node": (2, 2, 2)}, ONE, (2, 2, 2), (16, 16, 16)),
    # spec.suspend + Suspended=True: the suspended JobSet keeps the demand (2 pods x 8 GPUs = 16), no pods.
    Case("suspended", "Suspended", ("Suspended",), {"node": (2, 0, 0)}, ONE, (2, 0, 0), (16, 0, 0)),
    # Complete=True: both pods Succeeded, nothing live.
    Case("completed", "Completed", ("Completed",), {"node": (2, 0, 0)}, ONE, (2, 0, 0), (16, 0, 0)),
    # numNodes 3, no resourcesPerNode: the runtime's 4 GPUs per node reach the JobSet, so the spec
    # side is now 3 x 4 = 12 (was 0 without nesting); 3 live pods x 4 = 12 requested by pods; 2 on
    # nodes x 4 = 8 allocated; none ready.
    Case("initializing-runtime-resources", "Initializing", ("Initializing",), {"node": (3, 3, 0)}, ONE,
         (3, 3, 0), (12, 12, 8)),
    # Issue 28: the TrainingRuntime is in another namespace: Created=False, JobsBuildFailed; no
    # JobSet, so the stand-in trainer wants numNodes 3 pods and 0 GPUs (only the runtime has
    # them); Undefined (Unknown) with the reason, not Initializing.
    Case("runtime-missing", "Undefined", ("Undefined",), {"trainer": (3, 0, 0)}, {"trainer": [""]}, (3, 0, 0),
         (0, 0, 0), warnings=("runtime TrainingRuntime/torch-distributed could not be used (missing, in another "
                              "namespace or malformed): Created=False, JobsBuildFailed: Failed to build Jobs",)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


@pytest.mark.parametrize("state", ["running", "completed"])
def test_gpus_equal_those_of_its_jobset(state: str) -> None:
    # The JobSet the TrainJob owns, read through the JobSet definition: 1 replicated job x
    # parallelism 2 x 8 GPUs = 16, the TrainJob's figure: the same pods, not twice as many.
    docs = load(SLUG, state)
    trainjob = summary(resolve_objects(definition(SLUG), docs))
    jobset = summary(resolve_objects(definition(JOBSET), docs))
    assert trainjob["gpu"][0] == jobset["gpu"][0] == 16
    assert trainjob["gpu"] == jobset["gpu"]
    assert trainjob["pods"] == jobset["pods"]


def test_the_jobset_is_not_a_workload_of_its_own() -> None:
    reader = SnapshotReader.from_paths(Path(FIXTURES / SLUG / "running.yaml"))
    views = WorkloadService(DefinitionRegistry(catalog()), reader).workloads()
    assert [(v.kind, v.name) for v in views] == [("TrainJob", "llama-sft")]
    # 2 pods x 8 GPUs, counted once
    assert views[0].to_dict()["gpu"]["requestedByPods"] == 16


@pytest.mark.parametrize(("ref", "message"), [
    (None, "spec.runtimeRef is missing or not an object: the runtime cannot be read"),
    ("torch", "spec.runtimeRef is missing or not an object: the runtime cannot be read"),
    ({"kind": "ClusterTrainingRuntime"}, "spec.runtimeRef.name is missing or empty"),
    ({"apiGroup": "kubeflow.org", "kind": "PyTorchJob", "name": "x"},
     "spec.runtimeRef kubeflow.org/PyTorchJob is not a Trainer runtime kind"),
])
def test_a_malformed_runtime_ref_is_unknown_with_the_reason(ref: object, message: str) -> None:
    """Issue 28: the runtime reference itself cannot name a runtime (CRD: name required, kind
    TrainingRuntime or ClusterTrainingRuntime of trainer.kubeflow.org)."""
    import copy

    from workload_map.definitions.phases import Phase
    from workload_map.resolution import resolve

    root = copy.deepcopy(load(SLUG, "running")[0])
    root["spec"]["runtimeRef"] = ref
    view = resolve(definition(SLUG), root)
    assert view.phase is Phase.UNDEFINED
    assert [(e.field, e.message) for e in view.errors] == [("status", message)]
