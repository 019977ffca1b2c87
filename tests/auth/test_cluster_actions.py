"""Acceptance of issue 15 items 1-2 against the real control plane, with ``--auth kubernetes``.

The seed (``tests.api.test_cluster_e2e.create_seed``) is JobSet ``train`` with replicated jobs
leader (index 0, replicas 1) and worker (index 1, replicas 2). ``bob`` may get/list JobSets
in namespace A but not patch them; ``admin-token`` (system:masters) may do everything. The
server runs as its own ServiceAccount (no patch on jobsets) and writes by impersonating the
caller, so only the caller's own permission can make a write land.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import pytest

from workload_map.errors import Conflict
from workload_map.gvk import GVK
from workload_map.kube.api import KubeApi
from workload_map.kube.client import connect
from workload_map.kube.discovery import Discovery
from workload_map.kube.patches import ClusterWriter
from tests.api.test_cluster_e2e import wait_until_async
from tests.auth.test_cluster_auth import _bearer, _graphql, auth_server, cluster_setup

pytestmark = pytest.mark.cluster

JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without what every write changes (resourceVersion, generation, managedFields)."""
    out = copy.deepcopy(obj)
    for key in ("resourceVersion", "generation", "managedFields"):
        out["metadata"].pop(key, None)
    return out


async def test_pod_template_patch_suspend_resume_as_the_caller(k8s_control_plane: Any, tmp_path: Path) -> None:
    cp = k8s_control_plane
    async with cluster_setup(cp, tmp_path) as env:
        try:
            async with auth_server(env["kubeconfig"], tmp_path / "state") as client:
                await _scenario(cp, env, client)
        finally:
            # the test control plane runs no namespace controller: a deleted namespace keeps its
            # objects, so bob's grant is removed here or later tests would see this namespace
            await env["kube"].delete(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{env['a']}/rolebindings/bob")


async def _scenario(cp: Any, env: dict[str, Any], client: httpx.AsyncClient) -> None:
    kube: httpx.AsyncClient = env["kube"]
    ns = env["a"]
    stored_path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets/train"
    api = f"/api/v1/namespaces/{ns}/workloads/jobset.x-k8s.io/JobSet/train"
    admin, bob = _bearer(cp, "admin-token"), _bearer(cp, "bob")

    async def seen() -> bool:
        return (await client.get(api, headers=admin)).status_code == 200

    await wait_until_async(seen, 30)
    before = (await kube.get(stored_path)).json()
    body = {"components": ["replicatedjob"], "instances": ["worker"], "labels": {"wmap.test/team": "a"},
            "tolerations": [TOLERATION]}

    dry = await client.patch(api + "/pod-template?dryRun=true", json=body, headers=admin)
    assert dry.status_code == 200, dry.text
    worker = "/spec/replicatedJobs/1/template/spec/template"
    # create_seed's templates have a spec only: tolerations go into it, metadata is added whole
    assert dry.json()["patch"][1:] == [
        {"op": "add", "path": f"{worker}/spec/tolerations", "value": [TOLERATION]},
        {"op": "add", "path": f"{worker}/metadata", "value": {"labels": {"wmap.test/team": "a"}}}]
    assert (await kube.get(stored_path)).json() == before  # the dry run wrote nothing

    refused = await client.patch(api + "/pod-template", json=body, headers=bob)
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden", refused.text
    assert (await kube.get(stored_path)).json() == before

    stale = await client.patch(api + "/pod-template", json={**body, "resourceVersion": "1"}, headers=admin)
    assert stale.status_code == 409 and stale.json()["error"] == "conflict", stale.text
    assert (await kube.get(stored_path)).json() == before

    applied = await client.patch(api + "/pod-template", json=body, headers=admin)
    assert applied.status_code == 200 and applied.json()["appliedTo"] == "cluster", applied.text
    after = (await kube.get(stored_path)).json()
    assert applied.json()["resourceVersion"] == after["metadata"]["resourceVersion"]
    expected = _comparable(before)
    template = expected["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    template["metadata"] = {"labels": {"wmap.test/team": "a"}}
    template["spec"]["tolerations"] = [TOLERATION]
    assert _comparable(after) == expected  # the worker template changed, the leader and the rest did not

    # the API server itself refuses a patch pinned to an old resourceVersion (the precondition op)
    admin_client = await connect(str(cp.admin_kubeconfig))
    try:
        writer = ClusterWriter(admin_client, Discovery(KubeApi(admin_client)))
        ops = [{"op": "replace", "path": "/metadata/resourceVersion", "value": before["metadata"]["resourceVersion"]},
               {"op": "add", "path": "/metadata/labels", "value": {"late": "write"}}]
        with pytest.raises(Conflict):
            await writer.patch(JOBSET, ns, "train", ops, {})
    finally:
        await admin_client.close()
    assert (await kube.get(stored_path)).json() == after

    assert (await client.post(api + "/suspend", json={}, headers=bob)).status_code == 403
    mutation = """mutation($ns: String!) { suspendWorkload(namespace: $ns, group: "jobset.x-k8s.io", kind: "JobSet",
        name: "train", dryRun: true) { appliedTo dryRun patch } }"""
    denied = await _graphql(client, bob, mutation, ns=ns)
    assert denied["errors"][0]["extensions"] == {"code": "FORBIDDEN", "error": "forbidden"}
    dry_suspend = (await _graphql(client, admin, mutation, ns=ns))["data"]["suspendWorkload"]
    assert dry_suspend["appliedTo"] == "cluster" and dry_suspend["patch"][1:] == [
        {"op": "add", "path": "/spec/suspend", "value": True}]  # the seed has no spec.suspend yet
    assert (await kube.get(stored_path)).json() == after
    suspended = await client.post(api + "/suspend", json={}, headers=admin)
    assert suspended.status_code == 200, suspended.text
    assert (await kube.get(stored_path)).json()["spec"]["suspend"] is True

    async def phase_is(name: str) -> bool:
        return name in (await client.get(api + "/phase", headers=admin)).json()["phases"]

    # spec.suspend true without a Suspended condition: the catalog says Suspending
    await wait_until_async(lambda: phase_is("Suspending"), 30)
    resumed = await client.post(api + "/resume", json={}, headers=admin)
    assert resumed.status_code == 200, resumed.text
    assert (await kube.get(stored_path)).json()["spec"]["suspend"] is False

    async def not_suspending() -> bool:
        return not await phase_is("Suspending")

    await wait_until_async(not_suspending, 30)
