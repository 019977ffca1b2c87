"""LeaderWorkerSet (leaderworkerset.x-k8s.io/v1): expected views, worked out by hand.

Rules used (LWS v0.10): replicas = groups (default 1), size = pods per group (default 1) = 1
leader + (size-1) workers; the leader uses leaderTemplate, or workerTemplate when it is absent.
Roles: leader (replicas pods) and worker (replicas x (size-1) pods); each pod's replica key is
its group index.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

SLUG = "leaderworkerset-x-k8s-io-leaderworkerset-v1"
ONE = {"leader": [""], "worker": [""]}

CASES = [
    # 2 groups x size 4: leaders 2, workers 2 x 3 = 6; 8 pods x 8 GPUs = 64. No group ready ->
    # Initializing. All 8 pods live (64 GPUs); group 0's 4 pods are on nodes -> 32.
    Case("initializing", "Initializing", ("Initializing",), {"leader": (2, 2, 0), "worker": (6, 6, 0)}, ONE,
         (8, 8, 0), (64, 64, 32)),
    Case("running", "Running", ("Running",), {"leader": (2, 2, 2), "worker": (6, 6, 6)}, ONE, (8, 8, 8),
         (64, 64, 64)),
    # No leaderTemplate: the leader runs the workerTemplate (4 GPUs). 1 group x size 2:
    # 1 leader + 1 worker, 2 x 4 = 8 GPUs (the leader's 4 included).
    Case("running-no-leader-template", "Running", ("Running",), {"leader": (1, 1, 1), "worker": (1, 1, 1)}, ONE,
         (2, 2, 2), (8, 8, 8)),
    # 3 groups x size 2: 3 leaders + 3 workers, 8 GPUs each = 48. Group 2 is being recreated
    # (leader running not ready, worker being created): 2 of 3 groups ready -> Degraded.
    Case("degraded", "Degraded", ("Degraded",), {"leader": (3, 3, 2), "worker": (3, 3, 2)}, ONE, (6, 6, 4),
         (48, 48, 48)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)


def test_pods_carry_their_group_as_replica_key() -> None:
    view = resolve_fixture(SLUG, "running")
    keys = sorted((p.component, p.replica_key) for p in view.all_pods())
    assert keys == [("leader", "0"), ("leader", "1")] + [("worker", "0")] * 3 + [("worker", "1")] * 3


def test_leader_without_leader_template_uses_the_worker_template() -> None:
    leader = next(r for r in resolve_fixture(SLUG, "running-no-leader-template").roles() if r.name == "leader")
    assert leader.instance is None and leader.component.instances[0].has_pod_spec
    assert leader.gpu.to_dict()["requestedBySpec"] == 4


def test_gang_counts_every_group_once() -> None:
    # replicas 2 x size 4 = 8 pods: leader 2 + worker 6 (upstream's subtree gave 4 x (2 + 6) = 32)
    (gang,) = resolve_fixture(SLUG, "running").gangs
    assert (gang.min_member, gang.sub_groups) == (8, [("leader", 2), ("worker", 6)])
