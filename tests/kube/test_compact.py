"""``workload_map.kube.compact``: equal copies, interned strings, shared sub-trees."""

from __future__ import annotations

import json
import pickle

import msgspec

from workload_map.kube.compact import INTERN_MAX, KEY_MAX_BYTES, SHARE_MAX_ITEMS, SharedValues, compact


def _decoded(obj: dict) -> dict:
    """A fresh decode (as one list page gives): no string or dict shared with ``obj``."""
    return json.loads(json.dumps(obj))


def _pod(name: str, uid: str, rv: str) -> dict:
    return {"metadata": {"name": name, "namespace": "team-a", "uid": uid, "resourceVersion": rv,
                         "labels": {"app": "train", "role": "worker"},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u-j",
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"nodeName": "gpu-node-7", "containers": [{"name": "main", "resources": {
                "requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "reason": None}]},
            "long": "x" * (INTERN_MAX + 1)}


POD = _pod("p-0", "u-0", "10")


def test_copy_is_equal_and_shares_nothing_with_the_input() -> None:
    raw = _decoded(POD)
    out = compact(raw, SharedValues())
    assert out == POD
    assert out is not raw and out["metadata"] is not raw["metadata"]
    assert out["spec"]["containers"] is not raw["spec"]["containers"]
    assert out["status"]["conditions"][0] is not raw["status"]["conditions"][0]


def test_two_pods_of_one_template_share_every_sub_tree_but_their_metadata() -> None:
    shared = SharedValues()
    a = compact(_decoded(_pod("p-0", "u-0", "10")), shared)
    b = compact(_decoded(_pod("p-1", "u-1", "11")), shared)
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    # the controller reference (bools included) and the list holding it
    assert a["metadata"]["ownerReferences"] is b["metadata"]["ownerReferences"]
    # the pod spec as a whole: the same node, the same containers
    assert a["spec"] is b["spec"]
    # a condition holding null, the condition list and the status map
    assert a["status"] is b["status"]
    # metadata carries resourceVersion: one per object version, never shared
    assert a["metadata"] is not b["metadata"] and a is not b
    # strings longer than INTERN_MAX are kept as they are (equal, not one object)
    assert a["long"] == b["long"] and a["long"] is not b["long"]


def test_equal_values_of_other_types_never_share() -> None:
    shared = SharedValues()
    one, true, real, text = (compact({"x": v}, shared) for v in (1, True, 1.0, "1"))
    assert [one["x"], true["x"], real["x"], text["x"]] == [1, True, 1.0, "1"]
    assert [type(d["x"]) for d in (one, true, real, text)] == [int, bool, float, str]
    # a list and a map of the same items, and lists of maps that differ only in a nested value
    as_list, as_map = compact(["a", "b"], shared), compact({"a": "b"}, shared)
    assert as_list == ["a", "b"] and as_map == {"a": "b"}
    left, right = compact([{"r": {"cpu": "1"}}], shared), compact([{"r": {"cpu": "2"}}], shared)
    assert left != right and left[0]["r"]["cpu"] == "1" and right[0]["r"]["cpu"] == "2"


def test_large_containers_are_copied_not_shared() -> None:
    shared = SharedValues()
    big = {f"k{i}": "v" for i in range(SHARE_MAX_ITEMS + 1)}
    a, b = compact(_decoded(big), shared), compact(_decoded(big), shared)
    assert a == b == big and a is not b
    small = dict(list(big.items())[:SHARE_MAX_ITEMS])
    assert compact(_decoded(small), shared) is compact(_decoded(small), shared)


def test_pickling_keeps_the_value() -> None:
    shared = SharedValues()
    pods = [compact(_decoded(_pod(f"p-{i}", f"u-{i}", str(i))), shared) for i in range(3)]
    again = pickle.loads(pickle.dumps(pods))
    assert again == [_pod(f"p-{i}", f"u-{i}", str(i)) for i in range(3)]


def test_a_full_generation_ages_and_entries_met_again_survive() -> None:
    shared = SharedValues(capacity=2)
    first = compact({"a": "1"}, shared)
    compact({"b": "2"}, shared)
    compact({"c": "3"}, shared)  # young full: {"a"},{"b"} become old; {"c"} young
    assert compact({"a": "1"}, shared) is first  # found in old: promoted
    compact({"d": "4"}, shared)  # young ({"c"}, {"a"}) full: old dropped ({"b"} forgotten)
    compact({"e": "5"}, shared)
    assert len(shared) == 4
    assert compact({"a": "1"}, shared) is first  # still in old ({"c"}, {"a"}): promoted again
    again = compact({"b": "2"}, shared)  # forgotten: a new canonical, equal
    assert again == {"b": "2"}


def test_keys_are_exact_for_json_types() -> None:
    shared = SharedValues()
    zero, negative = compact({"x": 0.0}, shared), compact({"x": -0.0}, shared)
    assert str(zero["x"]) == "0.0" and str(negative["x"]) == "-0.0" and zero is not negative
    # a big int msgpack cannot encode is copied, not shared
    big = 2**70
    a, b = compact({"n": big}, shared), compact({"n": big}, shared)
    assert a == b == {"n": big} and a is not b


def test_containers_holding_other_types_are_copied_and_never_kept() -> None:
    import datetime

    shared = SharedValues()
    when = datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)
    a, b = compact({"t": when}, shared), compact({"t": when}, shared)
    assert a == b == {"t": when} and a is not b and a["t"] is when
    # a map with a non-string key, and its parent: copied each time
    c, d = compact({"m": {1: "a"}}, shared), compact({"m": {1: "a"}}, shared)
    assert c == d and c is not d and c["m"] is not d["m"]
    assert len(shared) == 0


def test_a_container_over_the_key_bound_is_copied_but_its_children_are_shared() -> None:
    shared = SharedValues()
    child = {"name": "c", "image": "x" * 60}
    wide = {f"k{i}": "v" * 60 for i in range(15)} | {"child": child}  # 16 items
    assert len(msgspec.msgpack.encode(wide)) > KEY_MAX_BYTES >= len(msgspec.msgpack.encode(child))
    a, b = compact(_decoded(wide), shared), compact(_decoded(wide), shared)
    assert a == b == wide and a is not b
    assert a["child"] is b["child"]


def test_nesting_as_deep_as_before_the_encoded_keys() -> None:
    """Maps 600 deep (msgspec's encoder stops near 490; the walk goes on to Python's limit)."""
    deep: dict = {"leaf": "x"}
    for _ in range(600):
        deep = {"a": deep}
    out = compact(deep, SharedValues())
    assert out == deep
