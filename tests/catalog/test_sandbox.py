"""Sandbox (agents.x-k8s.io v1beta1 and v1alpha1): expected views, worked out by hand.

Rules used (Agent Sandbox v0.2): one pod per Sandbox, named after it, 1 GPU in every fixture's
pod template. Suspended (v1beta1 operatingMode Suspended, v1alpha1 replicas 0) deletes the pod
but keeps the demand (issue 13): desired 1, requestedBySpec 1.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.catalog.support import Case, assert_case, definition, load
from workload_map.resolution import resolve

B1 = "agents-x-k8s-io-sandbox-v1beta1"
A1 = "agents-x-k8s-io-sandbox-v1alpha1"
IDS = {"agent": [""]}

CASES = [
    (B1, Case("running", "Running", ("Running",), {"agent": (1, 1, 1)}, IDS, (1, 1, 1), (1, 1, 1))),
    # Ready=False, the pod is on its node and not ready: allocated 1, ready 0.
    (B1, Case("initializing", "Initializing", ("Initializing",), {"agent": (1, 1, 0)}, IDS, (1, 1, 0), (1, 1, 1))),
    (B1, Case("suspended", "Suspended", ("Suspended",), {"agent": (1, 0, 0)}, IDS, (1, 0, 0), (1, 0, 0))),
    # mode Suspended without Suspended=True yet: the pod still runs.
    (B1, Case("suspending", "Suspending", ("Suspending",), {"agent": (1, 1, 1)}, IDS, (1, 1, 1), (1, 1, 1))),
    # mode Running with Suspended=True still set: no pod yet.
    (B1, Case("resuming", "Resuming", ("Resuming",), {"agent": (1, 0, 0)}, IDS, (1, 0, 0), (1, 0, 0))),
    # issue 28: Suspended=True (09:00) older than Ready=True (09:30): the later change decides.
    (B1, Case("resumed-old-suspended", "Running", ("Running",), {"agent": (1, 1, 1)}, IDS, (1, 1, 1), (1, 1, 1))),
    (A1, Case("running", "Running", ("Running",), {"agent": (1, 1, 1)}, IDS, (1, 1, 1), (1, 1, 1))),
    (A1, Case("initializing", "Initializing", ("Initializing",), {"agent": (1, 1, 0)}, IDS, (1, 1, 0), (1, 1, 1))),
    # replicas 0 (paused): Suspended, demand kept.
    (A1, Case("paused", "Suspended", ("Suspended",), {"agent": (1, 0, 0)}, IDS, (1, 0, 0), (1, 0, 0))),
]


@pytest.mark.parametrize(("slug", "case"), CASES, ids=lambda v: v if isinstance(v, str) else v.state)
def test_view(slug: str, case: Case) -> None:
    assert_case(slug, case)


def stale_suspended_root() -> dict[str, Any]:
    """The running Sandbox at generation 4 (operatingMode set back to Running): Ready=True computed
    for generation 4, a Suspended=True left from generation 3 (observedGeneration behind: stale,
    although its lastTransitionTime is later). Not a fixture: the API server sets generation."""
    root = copy.deepcopy(load(B1, "running")[0])
    root["metadata"]["generation"] = 4
    root["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "reason": "DependenciesReady", "message": "",
         "lastTransitionTime": "2026-11-19T09:00:00Z", "observedGeneration": 4},
        {"type": "Suspended", "status": "True", "reason": "PodDeleted", "message": "",
         "lastTransitionTime": "2026-11-19T09:30:00Z", "observedGeneration": 3}]
    return root


def test_a_stale_suspended_condition_decides_nothing() -> None:
    # issue 28: the stale Suspended=True decides nothing; the spec's operatingMode Running and
    # the fresh Ready=True -> Running (before: Resuming, from any Suspended=True).
    view = resolve(definition(B1), stale_suspended_root())
    assert view.phase.value == "Running"
    assert [(c["type"], c.get("stale")) for c in view.conditions] == [("Ready", None), ("Suspended", "true")]
    # the same condition computed for generation 4 (fresh, later than Ready) -> Resuming
    fresh = stale_suspended_root()
    fresh["status"]["conditions"][1]["observedGeneration"] = 4
    assert resolve(definition(B1), fresh).phase.value == "Resuming"
