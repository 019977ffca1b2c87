"""Status that cannot be interpreted, condition order and stale conditions (issue 28).

Working: RayCluster (KubeRay v1.x) reports ``status.state`` as a string ("ready", "suspended",
"failed"); without this check the catalog's Initializing rule (``state`` not one of those)
would hold for a numeric state. JobSet conditions are a list of metav1.Condition objects.
Kubernetes API conventions: a condition's observedGeneration behind metadata.generation was
set for an older spec.
"""

from __future__ import annotations

import copy

from tests.catalog.support import definition, load, resolve_objects
from workload_map.definitions.phases import Phase
from workload_map.resolution.freshness import fresh_view, shape_errors

RAY = "ray-io-raycluster-v1"
JOBSET = "jobset-x-k8s-io-jobset-v1alpha2"
SANDBOX = "agents-x-k8s-io-sandbox-v1beta1"


def test_a_numeric_state_is_a_warning_and_undefined_not_initializing() -> None:
    docs = copy.deepcopy(load(RAY, "running"))
    docs[0]["status"]["state"] = 3
    view = resolve_objects(definition(RAY), docs)
    assert view.phase is Phase.UNDEFINED and view.phases == [Phase.UNDEFINED]
    assert [e.field for e in view.errors] == ["status.state"]
    assert "status.state is a int (3)" in view.errors[0].message
    assert view.replicas.desired == resolve_objects(definition(RAY), load(RAY, "running")).replicas.desired


def test_conditions_as_a_string_are_a_warning_and_undefined() -> None:
    docs = copy.deepcopy(load(JOBSET, "completed"))
    docs[0]["status"]["conditions"] = "Completed"
    view = resolve_objects(definition(JOBSET), docs)
    assert view.phase is Phase.UNDEFINED
    assert [e.field for e in view.errors] == ["status.conditions"]


def test_a_status_that_is_not_an_object_and_a_condition_without_type() -> None:
    assert [e.field for e in shape_errors({"status": "Running"})] == ["status"]
    assert [e.field for e in shape_errors({"status": {"conditions": [{"type": "Ready"}, {"status": "True"}]}})] \
        == ["status.conditions[1]"]
    assert shape_errors({"status": {"state": {"phase": "Running"}}}) == []  # Volcano's state object


def test_conditions_are_ordered_by_last_transition_time_and_stale_ones_left_out() -> None:
    a = {"type": "A", "status": "True", "lastTransitionTime": "2026-01-01T10:00:00Z"}
    b = {"type": "B", "status": "True", "lastTransitionTime": "2026-01-01T09:00:00.500000Z"}
    c = {"type": "C", "status": "True", "lastTransitionTime": "2026-01-01T11:00:00Z", "observedGeneration": 2}
    seen, stale = fresh_view({"metadata": {"generation": 3}, "status": {"conditions": [a, b, c]}})
    assert [x["type"] for x in seen["status"]["conditions"]] == ["B", "A"]  # 09:00:00.5 before 10:00
    assert stale == [c]
    root = {"metadata": {"generation": 2}, "status": {"conditions": [b, a, c]}}
    assert fresh_view(root) == (root, [])  # in order, none stale: the object itself


def test_the_view_lists_a_stale_condition_marked_stale() -> None:
    from tests.catalog.test_sandbox import stale_suspended_root
    from workload_map.resolution import resolve

    view = resolve(definition(SANDBOX), stale_suspended_root())
    # generation 4: Suspended (observedGeneration 3) is stale, Ready (4) decides -> Running
    assert view.phase is Phase.RUNNING
    assert [(c["type"], c.get("stale")) for c in view.conditions] == [("Ready", None), ("Suspended", "true")]
