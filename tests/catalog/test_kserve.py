"""InferenceService (serving.kserve.io/v1beta1): expected views, worked out by hand.

Rules used (KServe v0.20): a component's pods = minReplicas (default 1; raised to 1 in Standard
mode; 0 for a component absent from the spec, and 0 while the stop annotation is "true"); roles
predictor, transformer, explainer; pods labelled component=<role>.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case

SLUG = "serving-kserve-io-inferenceservice-v1beta1"
ONE = {"predictor": [""], "transformer": [""], "explainer": [""]}

CASES = [
    # Standard mode, predictor only (minReplicas unset -> 1), 1 GPU; pod being created on a node.
    Case("initializing", "Initializing", ("Initializing",),
         {"predictor": (1, 1, 0), "transformer": (0, 0, 0), "explainer": (0, 0, 0)}, ONE, (1, 1, 0), (1, 1, 1)),
    # Standard mode: predictor minReplicas 2 (1 GPU each) + transformer (minReplicas unset -> 1,
    # no GPU): 3 pods, 2 GPUs. Ready=True -> Running (no RoutesReady in Standard mode).
    Case("running", "Running", ("Running",),
         {"predictor": (2, 2, 2), "transformer": (1, 1, 1), "explainer": (0, 0, 0)}, ONE, (3, 3, 3), (2, 2, 2)),
    # Knative mode: predictor minReplicas 1, GPU in limits only; the pod sits 6 owners below the
    # InferenceService (ReplicaSet, Deployment, Revision, Configuration, Knative Service).
    Case("running-knative", "Running", ("Running",),
         {"predictor": (1, 1, 1), "transformer": (0, 0, 0), "explainer": (0, 0, 0)}, ONE, (1, 1, 1), (1, 1, 1)),
    # Issue 28: Knative mode, newest revision 00002 failed (LatestDeploymentReady False) while
    # 100 % of the traffic still goes to the ready revision 00001, whose one pod (1 GPU) serves
    # -> Degraded; the figures are the serving revision's: 1 pod desired, current, ready; 1 GPU.
    Case("degraded-knative", "Degraded", ("Degraded",),
         {"predictor": (1, 1, 1), "transformer": (0, 0, 0), "explainer": (0, 0, 0)}, ONE, (1, 1, 1), (1, 1, 1)),
    # transitionStatus BlockedByFailedLoad -> Failed; the crashing pod is live on a node.
    Case("failed", "Failed", ("Failed",),
         {"predictor": (1, 1, 0), "transformer": (0, 0, 0), "explainer": (0, 0, 0)}, ONE, (1, 1, 0), (1, 1, 1)),
    # stop annotation "true" + Stopped=True -> Suspended; a stopped service keeps its demand:
    # predictor minReplicas 2 x 1 GPU = 2 by spec; its pods are deleted: 0 by pods, 0 allocated.
    Case("stopped", "Suspended", ("Suspended",),
         {"predictor": (2, 0, 0), "transformer": (0, 0, 0), "explainer": (0, 0, 0)}, ONE, (2, 0, 0), (2, 0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


def test_a_newest_revision_still_rolling_out_is_not_degraded() -> None:
    """Knative reports the new revision's readiness Unknown while it starts: no failure yet."""
    import copy

    from tests.catalog.support import definition, load, resolve_objects

    slug = "serving-kserve-io-inferenceservice-v1beta1"
    docs = copy.deepcopy(load(slug, "degraded-knative"))
    for c in docs[0]["status"]["conditions"]:
        c["status"] = "Unknown" if c["status"] == "False" else c["status"]
    assert resolve_objects(definition(slug), docs).phase.value == "Initializing"
    # no older revision receives traffic: nothing serves, the failure is not "Degraded"
    docs = copy.deepcopy(load(slug, "degraded-knative"))
    docs[0]["status"]["components"]["predictor"]["traffic"] = []
    assert resolve_objects(definition(slug), docs).phase.value == "Initializing"
