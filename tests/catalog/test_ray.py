"""RayCluster, RayJob and RayService (ray.io/v1): expected views, worked out by hand.

Rules used (KubeRay v1.7): worker pods of a group = clamp(replicas, minReplicas, maxReplicas)
x numOfHosts (default 1), 0 when the group or the whole object is suspended; the head is 1
pod, 0 when suspended. One role for the head and one per worker group (groupName). RayJob adds
the submitter Job (1 pod in K8sJobMode). Head pods have no GPUs in the fixtures.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

RC, RJ, RS = "ray-io-raycluster-v1", "ray-io-rayjob-v1", "ray-io-rayservice-v1"

RAYCLUSTER = [
    # head + gpu-group (replicas 2, 4 GPUs) + cpu-group (replicas 1): 1 + 2 + 1 = 4 pods,
    # 2 x 4 = 8 GPUs. No state yet -> Initializing. Live GPU pods: 2 (8 GPUs); on a node: 1 (4).
    Case("initializing", "Initializing", ("Initializing",),
         {"head": (1, 1, 0), "gpu-group": (2, 2, 0), "cpu-group": (1, 1, 1)},
         {"head": [""], "worker": ["gpu-group", "cpu-group"]}, (4, 4, 1), (8, 8, 4)),
    # gpu-multihost: 1 replica x numOfHosts 2 = 2 pods x 8 GPUs = 16; gpu-small: replicas 3
    # clamped to maxReplicas 2 -> 2 pods x 1 GPU = 2. Total 1 + 2 + 2 = 5 pods, 18 GPUs.
    Case("running", "Running", ("Running",),
         {"head": (1, 1, 1), "gpu-multihost": (2, 2, 2), "gpu-small": (2, 2, 2)},
         {"head": [""], "worker": ["gpu-multihost", "gpu-small"]}, (5, 5, 5), (18, 18, 18)),
    # state still "ready" but HeadPodReady=False -> Degraded. 1 + 2 pods, 2 x 2 GPUs.
    Case("degraded", "Degraded", ("Degraded",), {"head": (1, 1, 0), "gpu-group": (2, 2, 2)},
         {"head": [""], "worker": ["gpu-group"]}, (3, 3, 2), (4, 4, 4)),
    # spec.suspend true, state not yet "suspended" -> Suspending; the demand is kept (head 1 +
    # gpu-group 2 = 3 pods, 2 workers x 4 GPUs = 8 by spec) and the 3 old pods still run (8, 8).
    Case("suspending", "Suspending", ("Suspending",), {"head": (1, 1, 1), "gpu-group": (2, 2, 2)},
         {"head": [""], "worker": ["gpu-group"]}, (3, 3, 3), (8, 8, 8)),
    # spec.suspend true and state "suspended" -> Suspended: the same 3 pods / 8 GPUs asked for
    # once resumed, nothing running.
    Case("suspended", "Suspended", ("Suspended",), {"head": (1, 0, 0), "gpu-group": (2, 0, 0)},
         {"head": [""], "worker": ["gpu-group"]}, (3, 0, 0), (8, 0, 0)),
]

RAYJOB_INSTANCES = {"head": [""], "worker": ["small-group"], "submitter": [""]}
RAYJOB = [
    # head 1 + small-group 2 (1 GPU each) + submitter 1 (K8sJobMode) = 4 pods, 2 GPUs.
    # jobDeploymentStatus Initializing -> Initializing; the submitter does not exist yet.
    Case("initializing", "Initializing", ("Initializing",),
         {"head": (1, 1, 0), "small-group": (2, 2, 0), "submitter": (1, 0, 0)}, RAYJOB_INSTANCES, (4, 3, 0),
         (2, 2, 2)),
    # Running + jobStatus RUNNING; the submitter pod runs `ray job submit`.
    Case("running", "Running", ("Running",),
         {"head": (1, 1, 1), "small-group": (2, 2, 2), "submitter": (1, 1, 1)}, RAYJOB_INSTANCES, (4, 4, 4),
         (2, 2, 2)),
    # Complete: the cluster was deleted, the submitter pod Succeeded -> nothing live.
    Case("completed", "Completed", ("Completed",),
         {"head": (1, 0, 0), "small-group": (2, 0, 0), "submitter": (1, 0, 0)}, RAYJOB_INSTANCES, (4, 0, 0),
         (2, 0, 0)),
    # Failed (AppFailed); the cluster is kept, the submitter pod Failed.
    Case("failed", "Failed", ("Failed",),
         {"head": (1, 1, 1), "small-group": (2, 2, 2), "submitter": (1, 0, 0)}, RAYJOB_INSTANCES, (4, 3, 3),
         (2, 2, 2)),
    # spec.suspend true + jobDeploymentStatus Suspended: the demand is kept, head 1 + small-group 2
    # + submitter 1 = 4 pods, 2 workers x 1 GPU = 2 by spec; nothing running.
    Case("suspended", "Suspended", ("Suspended",),
         {"head": (1, 0, 0), "small-group": (2, 0, 0), "submitter": (1, 0, 0)}, RAYJOB_INSTANCES, (4, 0, 0),
         (2, 0, 0)),
]

SVC_INSTANCES = {"head": [""], "worker": ["gpu-group"]}
RAYSERVICE = [
    # Ready=False/Initializing. head 1 + gpu-group 2 (1 GPU each) = 3 pods, 2 GPUs.
    Case("initializing", "Initializing", ("Initializing",), {"head": (1, 1, 0), "gpu-group": (2, 2, 1)},
         SVC_INSTANCES, (3, 3, 1), (2, 2, 2)),
    Case("running", "Running", ("Running",), {"head": (1, 1, 1), "gpu-group": (2, 2, 2)}, SVC_INSTANCES, (3, 3, 3),
         (2, 2, 2)),
    # Upgrade: the active and the pending cluster both exist (live-scale rule: each live RayCluster
    # wants its head + its gpu-group replicas 2): desired 2 heads + 4 workers = 6, 4 x 1 GPU by
    # spec; 4 workers exist (one being created, not ready) -> current 6, ready 5; live GPUs 4 x 1.
    Case("running-upgrade", "Running", ("Running",), {"head": (2, 2, 2), "gpu-group": (4, 4, 3)}, SVC_INSTANCES,
         (6, 6, 5), (4, 4, 4)),
    # Ready=False/ZeroServeEndpoints -> Degraded.
    Case("degraded", "Degraded", ("Degraded",), {"head": (1, 1, 1), "gpu-group": (2, 2, 0)}, SVC_INSTANCES,
         (3, 3, 1), (2, 2, 2)),
    # spec.suspend true + Suspended=True: demand kept, head 1 + gpu-group 2 = 3 pods, 2 x 1 GPU = 2.
    Case("suspended", "Suspended", ("Suspended",), {"head": (1, 0, 0), "gpu-group": (2, 0, 0)}, SVC_INSTANCES,
         (3, 0, 0), (2, 0, 0)),
]


@pytest.mark.parametrize("case", RAYCLUSTER, ids=lambda c: c.state)
def test_raycluster(case: Case) -> None:
    assert_case(RC, case)


@pytest.mark.parametrize("case", RAYJOB, ids=lambda c: c.state)
def test_rayjob(case: Case) -> None:
    assert_case(RJ, case)


@pytest.mark.parametrize("case", RAYSERVICE, ids=lambda c: c.state)
def test_rayservice(case: Case) -> None:
    assert_case(RS, case)


def test_raycluster_bounds_are_pod_counts() -> None:
    roles = {r.name: r for r in resolve_fixture(RC, "running").roles()}
    # gpu-multihost: min 1 x 2 hosts = 2, max 2 x 2 = 4; gpu-small: min 0, max 2.
    assert (roles["gpu-multihost"].replicas.min, roles["gpu-multihost"].replicas.max) == (2, 4)
    assert (roles["gpu-small"].replicas.min, roles["gpu-small"].replicas.max) == (0, 2)
    # the unbounded default maxReplicas (2147483647) is not reported
    roles = {r.name: r for r in resolve_fixture(RC, "initializing").roles()}
    assert roles["gpu-group"].replicas.max == 4


def test_raycluster_gang_is_head_plus_workers() -> None:
    (gang,) = resolve_fixture(RC, "running").gangs
    # head 1; workers: gpu-multihost min 2 (> 0, so the min counts), gpu-small min 0 -> replicas 2
    assert (gang.name, gang.min_member, gang.sub_groups) == ("raycluster", 5, [("head", 1), ("worker", 4)])


@pytest.mark.parametrize(("slug", "path"), [
    ("ray-io-raycluster-v1", ("spec",)),
    ("ray-io-rayjob-v1", ("spec", "rayClusterSpec")),
    ("ray-io-rayservice-v1", ("spec", "rayClusterConfig")),
])
def test_no_head_group_spec_invents_no_head_pod(slug: str, path: tuple[str, ...]) -> None:
    """Issue 28: without headGroupSpec (CRD-required) the head wants 0 pods, not an invented 1."""
    import copy

    from tests.catalog.support import definition, load
    from workload_map.resolution import resolve

    root = copy.deepcopy(load(slug, "running")[0])
    holder = root
    for key in path:
        holder = holder[key]
    with_head = {r.name: r.replicas.desired for r in resolve(definition(slug), root).roles()}
    del holder["headGroupSpec"]
    without = {r.name: r.replicas.desired for r in resolve(definition(slug), root).roles()}
    assert with_head["head"] == 1 and without.get("head", 0) == 0
    assert {k: v for k, v in without.items() if k != "head"} == {k: v for k, v in with_head.items() if k != "head"}
