"""Milvus (milvus.io/v1beta1): expected views, worked out by hand.

Rules used (Milvus Operator v1.3.8): one role per Milvus component that runs in the mode
(standalone mode: standalone, default 1; cluster mode: proxy, mixcoord, datanode, querynode, and
indexnode when present, default 1 each; standalone 0), pods labelled
app.kubernetes.io/component=<component>; a component's resources fall back to
spec.components.resources. Query and index nodes have 1 GPU in the fixtures.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case

SLUG = "milvus-io-milvus-v1beta1"
CLUSTER = {"component": ["proxy", "mixcoord", "datanode", "querynode", "indexnode"]}

CASES = [
    # standalone, replicas unset -> 1 pod with 1 GPU, being created; status Pending.
    Case("initializing", "Initializing", ("Initializing",), {"standalone": (1, 1, 0)},
         {"component": ["standalone"]}, (1, 1, 0), (1, 1, 1)),
    # cluster: proxy 2 + mixcoord 1 + datanode 1 + querynode 3 + indexnode 1 = 8 pods;
    # GPUs querynode 3 + indexnode 1 = 4. status Healthy.
    Case("running", "Running", ("Running",),
         {"proxy": (2, 2, 2), "mixcoord": (1, 1, 1), "datanode": (1, 1, 1), "querynode": (3, 3, 3),
          "indexnode": (1, 1, 1)}, CLUSTER, (8, 8, 8), (4, 4, 4)),
    # same shape, one querynode not ready; status Unhealthy -> Degraded.
    Case("degraded", "Degraded", ("Degraded",),
         {"proxy": (2, 2, 2), "mixcoord": (1, 1, 1), "datanode": (1, 1, 1), "querynode": (3, 3, 2),
          "indexnode": (1, 1, 1)}, CLUSTER, (8, 8, 7), (4, 4, 4)),
    # stopped standalone (replicas 0), status Stopped + MilvusStopped -> Suspended.
    Case("suspended", "Suspended", ("Suspended",), {"standalone": (0, 0, 0)}, {"component": ["standalone"]},
         (0, 0, 0), (0, 0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)
