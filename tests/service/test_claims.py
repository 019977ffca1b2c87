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
