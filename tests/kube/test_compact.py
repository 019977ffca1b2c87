"""``workload_map.kube.compact``: equal copies, interned strings, shared string-valued maps."""

from __future__ import annotations

import json

from workload_map.kube.compact import INTERN_MAX, SharedMaps, compact


def _decoded(obj: dict) -> dict:
    """A fresh decode (as one list page gives): no string or dict shared with ``obj``."""
    return json.loads(json.dumps(obj))


POD = {"metadata": {"name": "p-0", "namespace": "team-a", "labels": {"app": "train", "role": "worker"}},
       "spec": {"nodeName": "gpu-node-7", "containers": [{"name": "main", "resources": {
           "requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}]},
       "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": None}]},
       "long": "x" * (INTERN_MAX + 1)}


def test_copy_is_equal_and_shares_nothing_mutable_with_the_input() -> None:
    raw = _decoded(POD)
    out = compact(raw, SharedMaps())
    assert out == POD
    assert out is not raw and out["metadata"] is not raw["metadata"]
    assert out["spec"]["containers"] is not raw["spec"]["containers"]


def test_two_decodes_share_strings_and_small_string_maps() -> None:
    shared = SharedMaps()
    a, b = compact(_decoded(POD), shared), compact(_decoded(POD), shared)
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["spec"]["nodeName"] is b["spec"]["nodeName"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]  # all-string map: shared
    requests = [o["spec"]["containers"][0]["resources"]["requests"] for o in (a, b)]
    assert requests[0] is requests[1]
    # a map holding a non-string (None) and every list stays per object
    assert a["status"]["conditions"][0] is not b["status"]["conditions"][0]
    assert a["spec"]["containers"] is not b["spec"]["containers"]
    # strings longer than INTERN_MAX are kept as they are
    assert a["long"] == b["long"] and a["long"] is not b["long"]
    # distinct maps: the labels and {"nvidia.com/gpu": "4"} (requests == limits) = 2;
    # hits: a's limits (1) + b's labels, requests, limits (3) = 4
    assert (len(shared), shared.hits) == (2, 4)


def test_a_full_table_is_emptied_and_sharing_starts_again() -> None:
    shared = SharedMaps(capacity=2)
    first = shared.share({"a": "1"})
    shared.share({"b": "2"})
    shared.share({"c": "3"})  # full: emptied, then {"c": "3"} remembered
    assert len(shared) == 1
    again = shared.share({"a": "1"})
    assert again == first and again is not first
