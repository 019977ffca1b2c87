"""The Karta status model: conditions, transition times, when to write (pure, no cluster)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from workload_map.gvk import GVK
from workload_map.kube.kartastatus import KartaFindings, conditions, desired_status, needs_write, root_gvk

JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
T0, T1 = "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z"


def by_type(status: dict) -> dict[str, dict]:
    return {c["type"]: c for c in status["conditions"]}


def test_valid_and_served_is_ready_with_generation_everywhere() -> None:
    status = desired_status(KartaFindings(4, (), JOBSET, True, workloads=3, last_resolved=T0), None, T1)
    conds = by_type(status)
    assert [(t, c["status"], c["reason"]) for t, c in conds.items()] == [
        ("Validated", "True", "ValidationSucceeded"), ("CRDExists", "True", "CRDFound"), ("Ready", "True", "Ready")]
    assert {c["observedGeneration"] for c in conds.values()} == {4} and status["observedGeneration"] == 4
    assert status["workloads"] == 3 and status["lastResolvedTime"] == T0
    assert all(c["lastTransitionTime"] == T1 for c in conds.values())


def test_invalid_karta_carries_the_findings_and_is_not_ready() -> None:
    problems = ("spec.structureDefinition.childComponents[0].ownerRef: unknown component \"nobody\"",
                "spec.x: second finding")
    conds = by_type(desired_status(KartaFindings(1, problems, JOBSET, True), None, T0))
    assert conds["Validated"]["status"] == "False" and conds["Validated"]["reason"] == "ValidationFailed"
    assert conds["Validated"]["message"] == "\n".join(problems)  # every finding, newline separated
    assert conds["CRDExists"]["status"] == "True"  # the kind is served even if the Karta is broken
    assert (conds["Ready"]["status"], conds["Ready"]["reason"]) == ("False", "NotReady")


def test_missing_crd_names_group_kind_and_version() -> None:
    conds = by_type(desired_status(KartaFindings(2, (), JOBSET, False), None, T0))
    assert conds["CRDExists"]["reason"] == "CRDNotFound"
    assert conds["CRDExists"]["message"] == "CRD for jobset.x-k8s.io/JobSet not found or does not serve version v1alpha2"
    assert conds["Ready"]["status"] == "False"


def test_unknown_discovery_and_no_root() -> None:
    unknown = by_type({"conditions": conditions(KartaFindings(1, (), JOBSET, None))})
    assert (unknown["CRDExists"]["status"], unknown["Ready"]["status"]) == ("Unknown", "False")
    rootless = by_type({"conditions": conditions(KartaFindings(1, ("x: y",), None, None))})
    assert rootless["CRDExists"]["status"] == "False"


def test_transition_time_kept_while_status_is_unchanged() -> None:
    first = desired_status(KartaFindings(1, (), JOBSET, False), None, T0)
    second = desired_status(KartaFindings(2, (), JOBSET, True), first, T1)
    conds = by_type(second)
    assert conds["Validated"]["lastTransitionTime"] == T0  # True both times
    assert conds["CRDExists"]["lastTransitionTime"] == T1  # False -> True
    assert conds["Ready"]["lastTransitionTime"] == T1


def test_needs_write_ignores_a_fresh_resolution_time_only() -> None:
    now = datetime(2026, 12, 1, 10, 0, 30, tzinfo=UTC)
    written = desired_status(KartaFindings(1, (), JOBSET, True, 2, T0), None, T0)
    same = desired_status(KartaFindings(1, (), JOBSET, True, 2, T0), written, T1)
    assert not needs_write(written, same, refresh_s=60, now=now)
    later = desired_status(KartaFindings(1, (), JOBSET, True, 2, "2026-12-01T10:00:20Z"), written, T1)
    assert not needs_write(written, later, refresh_s=60, now=now)  # written 30 s ago: within the 60 s refresh
    assert needs_write(written, later, refresh_s=60, now=now + timedelta(seconds=31))
    more = desired_status(KartaFindings(1, (), JOBSET, True, 3, T0), written, T1)
    assert needs_write(written, more, refresh_s=60, now=now)  # the count changed: written at once
    bumped = desired_status(KartaFindings(2, (), JOBSET, True, 2, T0), written, T1)
    assert needs_write(written, bumped, refresh_s=60, now=now)


def test_root_gvk_of_raw_documents() -> None:
    doc = {"spec": {"structureDefinition": {"rootComponent": {"kind": {"group": "", "version": "v1", "kind": "Pod"}}}}}
    assert root_gvk(doc) == GVK("", "v1", "Pod")
    assert root_gvk({"spec": {"structureDefinition": {"rootComponent": {"kind": {"kind": "Pod"}}}}}) is None
    assert root_gvk({"spec": "nonsense"}) is None
