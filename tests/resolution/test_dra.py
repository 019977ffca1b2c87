"""DRA GPUs (issue 13 item 1): ResourceClaimTemplates per pod, shared ResourceClaims once, allocation."""

from __future__ import annotations

from typing import Any

import pytest

from workload_map.paths import REPO_ROOT
from workload_map.definitions import load_definition
from workload_map.definitions.model import Definition
from workload_map.resolution import resolve
from workload_map.resolution.resources import gpu_policy

NS = "team-a"
DRA = "dra/gpu.nvidia.com"


@pytest.fixture(scope="module")
def deployment() -> Definition:
    return load_definition((REPO_ROOT / "catalog" / "apps-deployment-v1.yaml").read_text())


def exactly(name: str, device_class: str = "gpu.nvidia.com", **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": device_class, **fields}}


def claim_spec(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"requests": list(requests)}}


def template(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NS}, "spec": {"spec": claim_spec(*requests)}}


def claim(name: str, *requests: dict[str, Any], results: list[tuple[str, bool]] | None = None) -> dict[str, Any]:
    """A claim; ``results`` (request, adminAccess) as a driver writes status.allocation."""
    out: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": NS}, "spec": claim_spec(*requests)}
    if results is not None:
        out["status"] = {"allocation": {"devices": {"results": [
            {"request": r, "driver": "gpu.nvidia.com", "pool": "node-1", "device": f"gpu-{i}",
             **({"adminAccess": True} if admin else {})} for i, (r, admin) in enumerate(results)]}}}
    return out


def refs(with_template: str | None = "two-gpus", shared: str | None = "shared-gpu") -> list[dict[str, str]]:
    out = []
    if with_template:
        out.append({"name": "gpus", "resourceClaimTemplateName": with_template})
    if shared:
        out.append({"name": "shared", "resourceClaimName": shared})
    return out


def workload(replicas: int, claims: list[dict[str, str]]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "infer", "namespace": NS, "uid": "uid-deploy"},
            "spec": {"replicas": replicas, "template": {"spec": {
                "resourceClaims": claims, "containers": [{"name": "main", "resources": {"claims": [{"name": "gpus"}]}}]}}}}


def pod(name: str, node: str | None, claims: list[dict[str, str]], generated: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if generated:
        status["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": generated}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                         "ownerReferences": [{"uid": "uid-deploy", "controller": True}]},
            "spec": {**({"nodeName": node} if node else {}), "resourceClaims": claims,
                     "containers": [{"name": "main"}]}, "status": status}


def test_templates_count_per_pod_shared_claims_once_and_allocation_from_status(deployment: Definition) -> None:
    tmpl = template("two-gpus", exactly("gpu", count=2), exactly("monitor", adminAccess=True))
    shared = claim("shared-gpu", exactly("gpu"), results=[("gpu", False)])
    claims = [shared,
              claim("infer-a-gpus", exactly("gpu", count=2), exactly("monitor", adminAccess=True),
                    results=[("gpu", False), ("gpu", False), ("monitor", True)]),
              claim("infer-b-gpus", exactly("gpu", count=2))]
    pods = [pod("infer-a", "node-1", refs(), "infer-a-gpus"),  # bound, its claim allocated
            pod("infer-b", None, refs(), "infer-b-gpus"),  # claim made, not allocated yet
            pod("infer-c", None, refs(), None)]  # claim not made yet
    view = resolve(deployment, workload(3, refs()), pods=pods, claims=claims, claim_templates=[tmpl])
    # spec: 3 pods x 2 (the template; the admin-access request consumes nothing) + the shared claim once (1) = 7
    # pods: a 2 (allocated) + b 2 (its claim's spec) + c 2 (the template) + shared 1 once = 7
    # allocated: a is bound: its 2 allocated devices + the shared claim's 1 (allocated, named by a bound pod) = 3
    gpu = view.gpu.to_dict()
    assert gpu["byResource"] == {DRA: {"requestedBySpec": 7, "requestedByPods": 7, "allocated": 3}}
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (7, 7, 3)
    assert "unknown" not in gpu and view.errors == []
    rows = {p.name: p for p in view.all_pods()}
    assert rows["infer-a"].to_dict()["resources"]["byResource"] == {DRA: "2"}  # the pod's own claim only


def test_allocation_mode_all_is_unknown_until_allocated_then_the_allocated_devices(deployment: Definition) -> None:
    tmpl = template("all-gpus", exactly("gpu", allocationMode="All"))
    allocated = claim("infer-a-gpus", exactly("gpu", allocationMode="All"), results=[("gpu", False)] * 4)
    pending = claim("infer-b-gpus", exactly("gpu", allocationMode="All"))
    pods = [pod("infer-a", "node-1", refs("all-gpus", None), "infer-a-gpus"),
            pod("infer-b", None, refs("all-gpus", None), "infer-b-gpus")]
    view = resolve(deployment, workload(2, refs("all-gpus", None)), pods=pods, claims=[allocated, pending],
                   claim_templates=[tmpl])
    gpu = view.gpu.to_dict()
    # spec unknown (All, not allocated); pods: a's 4 allocated devices known, b unknown -> unknown;
    # allocated: 4 (a is bound and allocated); totals hold the known part
    assert gpu["byResource"] == {DRA: {"requestedBySpec": None, "requestedByPods": None, "allocated": 4}}
    assert gpu["unknown"] == ["requestedByPods", "requestedBySpec"]
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (0, 4, 4)


def test_first_available_asks_for_the_first_alternative_until_allocated(deployment: Definition) -> None:
    request = {"name": "gpu", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 1},
                                                 {"name": "small", "deviceClassName": "mig.nvidia.com", "count": 2}]}
    tmpl = template("flex", request)
    allocated = claim("infer-a-gpus", request, results=[("gpu/small", False), ("gpu/small", False)])
    pods = [pod("infer-a", "node-1", refs("flex", None), "infer-a-gpus")]
    view = resolve(deployment, workload(2, refs("flex", None)), pods=pods, claims=[allocated], claim_templates=[tmpl])
    gpu = view.gpu.to_dict()
    # spec: 2 pods x the first alternative (1 whole GPU) = 2; the pod got the second: 2 MIG partitions,
    # kept apart from whole GPUs (as MIG profiles are)
    assert gpu["byResource"] == {DRA: {"requestedBySpec": 2, "requestedByPods": 0, "allocated": 0},
                                 "dra/mig.nvidia.com": {"requestedBySpec": 0, "requestedByPods": 2, "allocated": 2}}
    assert (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]) == (2, 0, 0)


def test_gpu_device_classes_come_from_configuration(deployment: Definition) -> None:
    tmpl = template("t", exactly("gpu", "gpu.example.com", count=3), exactly("nic", "nic.example.com"))
    policy = gpu_policy(dra_classes=["gpu.example.com"])
    view = resolve(deployment, workload(1, refs("t", None)), claim_templates=[tmpl], policy=policy)
    # 1 pod x 3 devices of the configured class; the NIC class is not a GPU; the default classes no longer count
    assert view.gpu.to_dict(policy)["byResource"] == {
        "dra/gpu.example.com": {"requestedBySpec": 3, "requestedByPods": 0, "allocated": 0}}
    assert view.gpu.to_dict(policy)["requestedBySpec"] == 3
    default = resolve(deployment, workload(1, refs("t", None)), claim_templates=[tmpl])
    assert default.gpu.to_dict()["byResource"] == {}


def test_missing_templates_and_claims_are_errors_and_the_rest_resolves(deployment: Definition) -> None:
    other = template("other", exactly("gpu"))
    view = resolve(deployment, workload(2, refs("absent", "gone")), pods=[pod("infer-a", None, refs("absent", "gone"),
                                                                              None)], claim_templates=[other])
    assert [e.message for e in view.errors] == ["ResourceClaimTemplate team-a/absent not found",
                                                "ResourceClaim team-a/gone not found"]
    assert view.replicas.current == 1 and view.gpu.to_dict()["requestedBySpec"] == 0
