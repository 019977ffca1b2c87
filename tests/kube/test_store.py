"""Store indexes, upsert/replace semantics and change reporting."""

from __future__ import annotations

from workload_map.gvk import GVK
from workload_map.kube.store import Store, controller_uid

from .fakes import make_obj

POD = GVK("", "v1", "Pod")


def rv(obj: dict, value: str) -> dict:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": value}}


def test_indexes_by_namespace_uid_owner_and_labels() -> None:
    store = Store(POD)
    owner = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "uid": "job-1"}}
    a = make_obj(POD, "a", "ns1", uid="a", labels={"app": "x", "tier": "1"}, owner=owner)
    b = make_obj(POD, "b", "ns1", uid="b", labels={"app": "x", "tier": "2"})
    c = make_obj(POD, "c", "ns2", uid="c", labels={"app": "x"}, owner=owner)
    for obj in (c, b, a):
        store.upsert(obj)
    names = lambda objs: [o["metadata"]["name"] for o in objs]  # noqa: E731
    assert names(store.list()) == ["a", "b", "c"]
    assert names(store.list("ns1")) == ["a", "b"]
    assert names(store.list(labels={"app": "x"})) == ["a", "b", "c"]
    assert names(store.list("ns1", {"app": "x", "tier": "2"})) == ["b"]
    assert names(store.list(labels={"app": "nope"})) == []
    assert names(store.owned_by("job-1")) == ["a", "c"]
    assert store.by_uid("b")["metadata"]["name"] == "b"
    assert store.get("ns2", "c")["metadata"]["uid"] == "c"
    assert store.get("ns1", "c") is None
    assert controller_uid(store.get("ns1", "a")) == "job-1"


def test_update_reindexes_labels_and_owners() -> None:
    store = Store(POD)
    store.upsert(rv(make_obj(POD, "a", uid="a", labels={"v": "1"}), "1"))
    changes = store.upsert(rv(make_obj(POD, "a", uid="a", labels={"v": "2"}), "2"))
    assert [t for t, _ in changes] == ["MODIFIED"]
    assert store.list(labels={"v": "1"}) == [] and len(store.list(labels={"v": "2"})) == 1


def test_same_resource_version_is_no_change() -> None:
    store = Store(POD)
    obj = rv(make_obj(POD, "a", uid="a"), "5")
    assert [t for t, _ in store.upsert(obj)] == ["ADDED"]
    assert store.upsert(obj) == []


def test_new_uid_under_same_name_is_delete_plus_add() -> None:
    store = Store(POD)
    store.upsert(rv(make_obj(POD, "a", uid="old"), "1"))
    changes = store.upsert(rv(make_obj(POD, "a", uid="new"), "2"))
    assert [(t, o["metadata"]["uid"]) for t, o in changes] == [("DELETED", "old"), ("ADDED", "new")]
    assert store.by_uid("old") is None and store.by_uid("new") is not None


def test_replace_diffs_and_scopes_to_namespace() -> None:
    store = Store(POD)
    for name, ns in (("a", "n1"), ("b", "n1"), ("c", "n2")):
        store.upsert(rv(make_obj(POD, name, ns, uid=name), "1"))
    changes = store.replace([rv(make_obj(POD, "a", "n1", uid="a"), "1"),
                             rv(make_obj(POD, "d", "n1", uid="d"), "3")], namespace="n1")
    assert sorted((t, o["metadata"]["name"]) for t, o in changes) == [("ADDED", "d"), ("DELETED", "b")]
    assert sorted(o["metadata"]["name"] for o in store.list()) == ["a", "c", "d"], "n2 untouched"
    changes = store.replace([])
    assert sorted(o["metadata"]["name"] for t, o in changes) == ["a", "c", "d"] and len(store) == 0


def test_delete_and_cluster_scoped_keys() -> None:
    node = GVK("", "v1", "Node")
    store = Store(node)
    store.upsert(make_obj(node, "n1", None, uid="n1"))
    assert store.get(None, "n1") is not None and store.get("", "n1") is not None
    assert [t for t, _ in store.delete(None, "n1")] == ["DELETED"]
    assert store.delete(None, "n1") == [] and store.by_uid("n1") is None


def test_stored_dicts_are_replaced_not_mutated() -> None:
    store = Store(POD)
    store.upsert(rv(make_obj(POD, "a", uid="a", labels={"v": "1"}), "1"))
    held = store.get("ns", "a")
    store.upsert(rv(make_obj(POD, "a", uid="a", labels={"v": "2"}), "2"))
    assert held["metadata"]["labels"] == {"v": "1"}


def test_nameless_objects_are_ignored() -> None:
    store = Store(POD)
    assert store.upsert({"metadata": {}}) == [] and len(store) == 0
