"""Knative Service (serving.knative.dev/v1): expected views, worked out by hand.

Rules used (Knative Serving v1.23): the autoscaler writes each revision's Deployment
spec.replicas, so a live Deployment's replicas are the desired pods (live-scale rule, summed over
revisions); without a Deployment the count is the template's min-scale annotation, default 0
with the KPA class (scale to zero) and 1 with the HPA class. One role, revision, claims the
pods of every revision.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case

SLUG = "serving-knative-dev-service-v1"
ONE = {"revision": [""]}

CASES = [
    # No min-scale (KPA, template 0), but the Deployment exists at initial scale 1: desired 1 x
    # 1 GPU; the pod is being created on a node. Ready Unknown, no ready revision -> Initializing.
    Case("initializing", "Initializing", ("Initializing",), {"revision": (1, 1, 0)}, ONE, (1, 1, 0), (1, 1, 1)),
    # min-scale 1 (1 GPU), but under load the autoscaler set the Deployment to 2: desired 2 x 1 GPU.
    Case("running", "Running", ("Running",), {"revision": (2, 2, 2)}, ONE, (2, 2, 2), (2, 2, 2)),
    # HPA class without min-scale -> min 1; CPU only.
    Case("running-hpa-class", "Running", ("Running",), {"revision": (1, 1, 1)}, ONE, (1, 1, 1), (0, 0, 0)),
    # Ready, scaled to zero: nothing wanted, nothing running.
    Case("running-scaled-to-zero", "Running", ("Running",), {"revision": (0, 0, 0)}, ONE, (0, 0, 0), (0, 0, 0)),
    # Revision 00002 failed, 00001 (latest ready) still serves -> Degraded. Each revision's
    # Deployment wants 1 (min-scale 1): desired 1 + 1 = 2 x 1 GPU; pods: 00001 ready + 00002
    # not ready, 1 GPU each.
    Case("degraded", "Degraded", ("Degraded",), {"revision": (2, 2, 1)}, ONE, (2, 2, 1), (2, 2, 2)),
    # The only revision never became ready -> Failed; its pod waits for its image on a node.
    Case("failed", "Failed", ("Failed",), {"revision": (1, 1, 0)}, ONE, (1, 1, 0), (1, 1, 1)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)
