"""LLMInferenceService (serving.kserve.io v1alpha2 and v1alpha1): expected views, worked out by hand.

Rules used (KServe v0.16 llmisvc controller): main pods = spec.replicas (default 1); with
spec.worker each replica is an LWS group of size parallelism.pipeline (else data / dataLocal,
else 1): the leader is a main pod, the other size - 1 pods are workers; prefill and the router's
scheduler are Deployments of their own replicas. The two versions' fixtures are the same
scenarios (v1alpha1 names end in -a1), so the expected views are the same.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case, resolve_fixture

SLUGS = ["serving-kserve-io-llminferenceservice-v1alpha2", "serving-kserve-io-llminferenceservice-v1alpha1"]
IDS = {"main": [""], "worker": [""], "prefill": [""], "prefill-worker": [""], "router-scheduler": [""]}


def roles(main: tuple[int, int, int], worker: tuple[int, int, int] = (0, 0, 0), prefill: tuple[int, int, int] = (0, 0, 0),
          scheduler: tuple[int, int, int] = (0, 0, 0)) -> dict[str, tuple[int, int, int]]:
    return {"main": main, "worker": worker, "prefill": prefill, "prefill-worker": (0, 0, 0),
            "router-scheduler": scheduler}


CASES = [
    # decode 2 x 1 GPU + prefill 1 x 2 GPUs + scheduler 1 x 0 = 4 pods, 2 + 2 = 4 GPUs; Ready=True.
    Case("running", "Running", ("Running",), roles((2, 2, 2), prefill=(1, 1, 1), scheduler=(1, 1, 1)), IDS,
         (4, 4, 4), (4, 4, 4)),
    # pipeline 2 -> group size 2: 1 leader (main) + 1 worker, 8 GPUs each = 16.
    Case("running-multinode", "Running", ("Running",), roles((1, 1, 1), worker=(1, 1, 1)), IDS, (2, 2, 2),
         (16, 16, 16)),
    # Ready=Unknown: 1 x 4 GPUs, the pod is on its node (allocated), not ready.
    Case("initializing", "Initializing", ("Initializing",), roles((1, 1, 0)), IDS, (1, 1, 0), (4, 4, 4)),
    # Ready=False/DeploymentFailed: 2 x 1 GPU, both pods live, one on a node -> 1 allocated.
    Case("failed", "Failed", ("Failed",), roles((2, 2, 0)), IDS, (2, 2, 0), (2, 2, 1)),
]


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(slug: str, case: Case) -> None:
    assert_case(slug, case)


@pytest.mark.parametrize("slug", SLUGS)
def test_gang_counts_the_serving_pods(slug: str) -> None:
    # main 2 + prefill 1 (the scheduler is not part of the gang) = 3.
    (gang,) = resolve_fixture(slug, "running").gangs
    assert gang.min_member == 3


@pytest.mark.parametrize("slug", SLUGS)
@pytest.mark.parametrize(("parallelism", "replicas", "main", "workers"), [
    # pipeline 4 -> group size 4 = 1 leader + 3 workers; 3 groups: 3 leaders (main), 9 workers
    ({"pipeline": 4, "tensor": 8}, 3, 3, 9),
    # no pipeline: data 8 / dataLocal 2 = 4 per group -> 1 leader + 3 workers each
    ({"data": 8, "dataLocal": 2}, 3, 3, 9),
    # data 4 without dataLocal (1 rank per pod) -> size 4
    ({"data": 4}, 2, 2, 6),
    # pipeline 1: a group is its leader alone, 0 workers (never -1)
    ({"pipeline": 1}, 2, 2, 0),
])
def test_multinode_group_is_one_leader_plus_size_minus_one_workers(
        slug: str, parallelism: dict[str, int], replicas: int, main: int, workers: int) -> None:
    """Issue 28: the group size includes the leader (KServe renders LeaderWorkerSet size = it)."""
    import copy

    from tests.catalog.support import definition, load
    from workload_map.resolution import resolve

    root = copy.deepcopy(load(slug, "running-multinode")[0])
    root["spec"]["parallelism"] = parallelism
    root["spec"]["replicas"] = replicas
    view = resolve(definition(slug), root)
    desired = {r.name: r.replicas.desired for r in view.roles()}
    assert (desired["main"], desired["worker"]) == (main, workers)
    assert view.replicas.desired == main + workers  # = replicas x group size
