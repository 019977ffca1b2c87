"""AppWrapper (workload.codeflare.dev/v1beta2): expected views of the fixture states, worked out by hand.

Rules used (AppWrapper v1.1): while nothing is deployed, each wrapped template of a kind with a
definition is a would-be child (``workload-map.run.ai/nested-templates``) read through that
definition; else desired pods = the sum of the podSets' replicas (status componentStatus, else
spec; the ``pods`` stand-in component); once
the wrapped resource exists it is a nested child (``workload-map.run.ai/nested``): its roles,
desired pods and spec-side GPUs are read through its own definition (PyTorchJob master/worker,
Job), its pods counted once under the AppWrapper.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from workload_map.definitions.load import load_definition
from tests.catalog.support import FIXTURES, Case, assert_case, catalog, definition, load, resolve_objects

SLUG = "workload-codeflare-dev-appwrapper-v1beta2"
IDS = {"pods": [""]}

CASES = [
    # Changed on purpose with nesting (was roles {pods: 3/3/3}, gpu (0, 6, 6)): the wrapped
    # PyTorchJob read through its definition: master 1 x 2 GPUs + worker 2 x 2 GPUs = 6 by spec;
    # its 3 pods x 2 GPUs = 6 by pods, all on nodes = 6 allocated.
    Case("running", "Running", ("Running",), {"master": (1, 1, 1), "worker": (2, 2, 2)},
         {"master": [""], "worker": [""]}, (3, 3, 3), (6, 6, 6)),
    # Changed on purpose (was {pods: 3/0/0}, gpu (0, 0, 0)): queued, nothing deployed; the wrapped
    # PyTorchJob template is read as a would-be child (nested-templates) through its definition:
    # master 1 x 2 GPUs + worker 2 x 2 GPUs = 6 by spec, 3 pods desired, none exists yet.
    Case("suspended", "Suspended", ("Suspended",), {"master": (1, 0, 0), "worker": (2, 0, 0)},
         {"master": [""], "worker": [""]}, (3, 0, 0), (6, 0, 0)),
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


def test_a_queued_wrapper_of_a_kind_without_definition_keeps_the_stand_in() -> None:
    docs = copy.deepcopy(load(SLUG, "suspended"))
    docs[0]["spec"]["components"][0]["template"]["apiVersion"] = "example.com/v1"  # no catalog entry
    view = resolve_objects(definition(SLUG), docs)
    # no would-be child can be read: the `pods` stand-in keeps the podSets' 1 + 2 = 3 pods, spec 0
    assert [(r.name, r.replicas.desired) for r in view.roles()] == [("pods", 3)]
    assert view.to_dict()["gpu"]["requestedBySpec"] == 0 and view.errors == []


def test_a_failing_templates_expression_is_an_error_of_the_view_not_a_lost_view() -> None:
    manifest = copy.deepcopy(definition(SLUG).manifest)
    manifest["metadata"]["annotations"]["workload-map.run.ai/nested-templates"] = ".spec.components | error(\"x\")"
    view = resolve_objects(load_definition(manifest), load(SLUG, "suspended"))
    assert [(r.name, r.replicas.desired) for r in view.roles()] == [("pods", 3)]  # the stand-in, as before
    assert any("nested-templates" in str(e.message) for e in view.errors), view.errors
