"""PodCliqueSet (grove.io/v1alpha1): expected views, worked out by hand.

Rules used (Grove v0.1.0-alpha.11): pods of a clique = PodCliqueSet replicas x (scaling-group
replicas when the clique is in a group) x clique replicas; one role per clique template; pods
are matched to their clique by the template name derived from the grove.io/podclique label.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

SLUG = "grove-io-podcliqueset-v1alpha1"

CASES = [
    # router 1 (CPU) + worker 4 x 8 GPUs = 32; all 4 workers pending (not on a node): allocated 0.
    Case("initializing", "Initializing", ("Initializing",), {"router": (1, 1, 1), "worker": (4, 4, 0)},
         {"clique": ["router", "worker"]}, (5, 5, 1), (32, 32, 0)),
    # 1 replica: frontend 2 (CPU), decode 2 x 4 GPUs = 8; scaling group prefill x 2 replicas:
    # prefill-leader 2 x 1 = 2 pods x 8 = 16, prefill-worker 2 x 2 = 4 pods x 8 = 32.
    # 10 pods, 8 + 16 + 32 = 56 GPUs.
    Case("running", "Running", ("Running",),
         {"frontend": (2, 2, 2), "decode": (2, 2, 2), "prefill-leader": (2, 2, 2), "prefill-worker": (4, 4, 4)},
         {"clique": ["frontend", "decode", "prefill-leader", "prefill-worker"]}, (10, 10, 10), (56, 56, 56)),
    # 2 replicas x worker 2 = 4 pods x 8 GPUs; 1 of 2 replicas available -> Degraded.
    Case("degraded", "Degraded", ("Degraded",), {"worker": (4, 4, 3)}, {"clique": ["worker"]}, (4, 4, 3),
         (32, 32, 32)),
    # TopologyLevelsUnavailable=True -> Failed; 4 pods x 8 GPUs pending.
    Case("failed", "Failed", ("Failed",), {"worker": (4, 4, 0)}, {"clique": ["worker"]}, (4, 4, 0), (32, 32, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


def test_replica_keys_and_gang_minimum() -> None:
    view = resolve_fixture(SLUG, "degraded")
    assert sorted(p.replica_key for p in view.all_pods()) == ["0", "0", "1", "1"]
    view = resolve_fixture(SLUG, "running")
    # gang minimum: frontend 2, decode 2 (minAvailable = replicas), prefill group minAvailable 1:
    # prefill-leader 1 x 1, prefill-worker 1 x 2 -> 2 + 2 + 1 + 2 = 7
    (gang,) = view.gangs
    assert gang.min_member == 7
