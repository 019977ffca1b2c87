"""ClaimDependents: (namespace, shared ResourceClaim name) -> pods naming it."""

from __future__ import annotations

from typing import Any

from workload_map.materialization.claims import ClaimDependents


def _pod(uid: str, namespace: str, *claims: str, template: str | None = None) -> dict[str, Any]:
    refs: list[dict[str, Any]] = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    if template:
        refs.append({"name": "own", "resourceClaimTemplateName": template})
    return {"metadata": {"uid": uid, "namespace": namespace, "name": uid}, "spec": {"resourceClaims": refs}}


def test_pods_naming_a_claim_are_found_per_namespace() -> None:
    index = ClaimDependents()
    index.update(_pod("a", "team-a", "shared"))
    index.update(_pod("b", "team-a", "shared", "other"))
    index.update(_pod("c", "team-b", "shared"))  # same name, another namespace: another claim
    index.update(_pod("d", "team-a", template="two-gpus"))  # template only: its claim is owned by the pod
    assert index.pods_of("team-a", "shared") == ["a", "b"]
    assert index.pods_of("team-a", "other") == ["b"]
    assert index.pods_of("team-b", "shared") == ["c"]
    assert index.pods_of("team-a", "two-gpus") == []
    assert len(index) == 3  # d names no shared claim and is not kept


def test_a_changed_or_deleted_pod_is_forgotten() -> None:
    index = ClaimDependents()
    index.update(_pod("a", "team-a", "shared"))
    index.update(_pod("a", "team-a", "other"))  # MODIFIED: now names only "other"
    assert index.pods_of("team-a", "shared") == [] and index.pods_of("team-a", "other") == ["a"]
    index.update(_pod("a", "team-a", "other"), deleted=True)
    assert index.pods_of("team-a", "other") == [] and len(index) == 0
    index.update({"metadata": {"name": "no-uid"}, "spec": {"resourceClaims": [{"resourceClaimName": "x"}]}})
    assert len(index) == 0  # an object without uid is ignored


def _api_pod(name: str, *claims: str) -> dict[str, Any]:
    pod = _pod(f"uid-{name}", "team-a", *claims)
    pod["metadata"]["name"] = name
    return {"apiVersion": "v1", "kind": "Pod", **pod}


def test_the_stepped_start_indexes_every_pod_and_never_undoes_an_event(monkeypatch: Any) -> None:
    """The start index is built in steps between which events arrive: each is kept, none overwritten."""
    from workload_map.definitions.catalog import load_catalog
    from workload_map.definitions.registry import DefinitionRegistry
    from workload_map.paths import default_catalog_dir
    from workload_map.kube.snapshot import SnapshotReader
    from workload_map.materialization import marking as marking_module
    from workload_map.service.workloads import WorkloadService

    monkeypatch.setattr(marking_module, "START_YIELD_EVERY", 1)  # a yield after every pod
    reader = SnapshotReader([_api_pod("p1", "shared"), _api_pod("p2", "shared"), _api_pod("p3", "shared")])
    service = WorkloadService(DefinitionRegistry(load_catalog(default_catalog_dir(), defer_jq=True)), reader)
    marks: list[str] = []
    events = marking_module.EventMarking(service, marks.append)
    reader.add_listener(events.on_event)
    steps = events.start_steps()
    next(steps)  # p1 indexed; the loop serves: events for pods not indexed yet arrive
    assert events.listening and events.claims.pods_of("team-a", "shared") == ["uid-p1"]
    reader.add(_api_pod("p3", "other"))  # MODIFIED before its step: now names "other" only
    reader.remove(marking_module.POD_GVK, "team-a", "p2")  # DELETED before its step
    reader.add(_api_pod("p4", "shared"))  # ADDED after the listing
    for _ in steps:
        pass
    assert events.claims.pods_of("team-a", "shared") == ["uid-p1", "uid-p4"]  # p2 deleted, p3 moved on
    assert events.claims.pods_of("team-a", "other") == ["uid-p3"]
    assert len(events.claims) == 3
