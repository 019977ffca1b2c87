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
