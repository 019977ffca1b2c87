"""Acceptance of issue 6 against the real control plane: callers see only what they may list,
tokens are required, registration needs create on kartas and is written as the caller.

Identities:

* the server runs as a dedicated ServiceAccount ``wmap-server`` (a TokenRequest token in a
  kubeconfig) allowed get/list/watch on everything, create on tokenreviews and
  subjectaccessreviews, and impersonate on users/groups/serviceaccounts, but NOT create on
  kartas: a Karta it writes for a caller can only be accepted through impersonation;
* ``bob`` (static token, group team-b) may list JobSets (and get pods) in namespace A only
  (Role + RoleBinding made by the admin); later also get/create/update/delete kartas;
* ``admin-token`` (system:masters) sees everything.

Servers run under uvicorn on 127.0.0.1 in the test loop; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from workload_map.app import create_app
from workload_map.config import AuthSettings, KubeSettings, Settings
from tests.api.live import serving
from tests.api.test_cluster_e2e import create_seed, wait_until_async
from tests.api.test_mutations import jobset_definition
from tests.cluster.kubeconfig import write_kubeconfig

YAML_BODY = {"Content-Type": "application/yaml"}

pytestmark = pytest.mark.cluster

RBAC = "/apis/rbac.authorization.k8s.io/v1"
KARTAS = "/apis/run.ai/v1alpha1/kartas"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2"
SERVER_RULES = [
    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["users", "groups", "serviceaccounts"], "verbs": ["impersonate"]},
]
LIST = """query($ns: String) { workloads(namespace: $ns) { totalCount nodes { namespace name pods { name } } } }"""
ONE = """query($ns: String!) { workload(namespace: $ns, group: "jobset.x-k8s.io", kind: "JobSet", name: "train")
    { name } }"""


async def _create(kube: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await kube.post(path, json=body)
    assert response.status_code == 201, f"{path}: {response.status_code} {response.text}"
    created: dict[str, Any] = response.json()
    return created


async def _allowed(kube: httpx.AsyncClient, user: str, groups: list[str], attributes: dict[str, str]) -> bool:
    review = await _create(kube, "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": groups, "resourceAttributes": attributes}})
    return bool(review["status"].get("allowed"))


async def _until_allowed(kube: httpx.AsyncClient, user: str, groups: list[str], attributes: dict[str, str],
                         expected: bool = True) -> None:
    """RBAC is read through informers: wait (bounded) until the grant is in force."""
    async def settled() -> bool:
        return await _allowed(kube, user, groups, attributes) == expected

    await wait_until_async(settled, 30)


@contextlib.asynccontextmanager
async def cluster_setup(cp: Any, tmp: Path) -> AsyncIterator[dict[str, Any]]:
    """Namespaces A and B with a JobSet each, the server's ServiceAccount and kubeconfig, bob's
    Role in A; everything removed afterwards."""
    suffix = secrets.token_hex(4)
    ns_a, ns_b, ns_server = f"t-auth-a-{suffix}", f"t-auth-b-{suffix}", f"t-auth-srv-{suffix}"
    role = f"wmap-test-server-{suffix}"
    async with cp.async_client() as kube:
        try:
            for ns in (ns_a, ns_b, ns_server):
                await _create(kube, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": ns}})
            await _create(kube, f"/api/v1/namespaces/{ns_server}/serviceaccounts",
                          {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "wmap-server"}})
            await _create(kube, f"{RBAC}/clusterroles", {"apiVersion": "rbac.authorization.k8s.io/v1",
                                                         "kind": "ClusterRole", "metadata": {"name": role},
                                                         "rules": SERVER_RULES})
            await _create(kube, f"{RBAC}/clusterrolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": "wmap-server", "namespace": ns_server}]})
            await _create(kube, f"{RBAC}/namespaces/{ns_a}/roles", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "jobset-reader"},
                "rules": [{"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get", "list"]},
                          {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]})
            await _create(kube, f"{RBAC}/namespaces/{ns_a}/rolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "bob"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "jobset-reader"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]})
            token = (await _create(kube, f"/api/v1/namespaces/{ns_server}/serviceaccounts/wmap-server/token", {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600}}))["status"]["token"]
            kubeconfig = write_kubeconfig(tmp / "server.kubeconfig", cp.server, cp.ca_file, "wmap-server",
                                          token=token)
            server_user = f"system:serviceaccount:{ns_server}:wmap-server"
            server_groups = ["system:serviceaccounts", f"system:serviceaccounts:{ns_server}", "system:authenticated"]
            for attributes in ({"verb": "watch", "group": "jobset.x-k8s.io", "resource": "jobsets"},
                               {"verb": "create", "group": "authorization.k8s.io", "resource": "subjectaccessreviews"},
                               {"verb": "impersonate", "group": "", "resource": "users"}):
                await _until_allowed(kube, server_user, server_groups, attributes)
            await _until_allowed(kube, "bob", ["team-b"], {"verb": "list", "group": "jobset.x-k8s.io",
                                                           "resource": "jobsets", "namespace": ns_a})
            assert not await _allowed(kube, server_user, server_groups,
                                      {"verb": "create", "group": "run.ai", "resource": "kartas"})
            for ns in (ns_a, ns_b):
                await create_seed(kube, ns)
            yield {"a": ns_a, "b": ns_b, "kubeconfig": kubeconfig, "suffix": suffix, "kube": kube}
        finally:
            await kube.delete(f"{RBAC}/clusterrolebindings/{role}")
            await kube.delete(f"{RBAC}/clusterroles/{role}")
            for ns in (ns_a, ns_b, ns_server):
                await kube.delete(f"/api/v1/namespaces/{ns}")


@contextlib.asynccontextmanager
async def auth_server(kubeconfig: Path, tmp: Path, *, impersonate: bool = True) -> AsyncIterator[httpx.AsyncClient]:
    """``--auth kubernetes`` over the control plane as the server's ServiceAccount; yields a
    client once ``/readyz`` (open) is 200. Decisions are cached 1 s so RBAC changes show fast."""
    settings = Settings(kube=KubeSettings(kubeconfig=str(kubeconfig)), state_dir=tmp,
                        auth=AuthSettings(mode="kubernetes", impersonate=impersonate, cache_ttl_s=1.0))
    app = create_app(settings)
    async with serving(app, timeout=30) as host, httpx.AsyncClient(base_url=f"http://{host}", timeout=60) as client:
        async def ready() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await wait_until_async(ready, 60)
        yield client


def _bearer(cp: Any, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {cp.tokens[user]}"}


async def _graphql(client: httpx.AsyncClient, headers: dict[str, str], query: str, **variables: Any) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query, "variables": variables}, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_callers_see_exactly_the_namespaces_they_may_list(k8s_control_plane: Any, tmp_path: Path) -> None:
    cp = k8s_control_plane
    async with cluster_setup(cp, tmp_path) as env, auth_server(env["kubeconfig"], tmp_path / "state") as client:
        ns_a, ns_b = env["a"], env["b"]
        admin, bob = _bearer(cp, "admin-token"), _bearer(cp, "bob")

        async def both_seen() -> bool:
            items = (await client.get("/api/v1/workloads", headers=admin)).json()["items"]
            return {ns_a, ns_b} <= {i["namespace"] for i in items}

        await wait_until_async(both_seen, 30)
        for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic Ym9i"}):
            for method, path in (("GET", "/api/v1/workloads"), ("POST", "/graphql")):
                response = await client.request(method, path, headers=headers, json={"query": LIST})
                assert response.status_code == 401 and response.json()["error"] == "unauthorized", response.text

        rest = (await client.get("/api/v1/workloads", headers=bob)).json()
        assert [(i["namespace"], i["name"]) for i in rest["items"]] == [(ns_a, "train")]
        assert (await client.get(f"/api/v1/namespaces/{ns_b}/workloads", headers=bob)).json()["items"] == []
        nodes = (await _graphql(client, bob, LIST))["data"]["workloads"]["nodes"]
        assert [(n["namespace"], n["name"]) for n in nodes] == [(ns_a, "train")] and len(nodes[0]["pods"]) == 3
        summary = await _graphql(client, bob, "{ gpuSummary(groupBy: NAMESPACE) { key workloads } }")
        assert [b["key"] for b in summary["data"]["gpuSummary"]] == [ns_a]

        path = "/api/v1/namespaces/{ns}/workloads/jobset.x-k8s.io/JobSet/train"
        assert (await client.get(path.format(ns=ns_a), headers=bob)).status_code == 200
        hidden = await client.get(path.format(ns=ns_b), headers=bob)
        missing = await client.get(path.format(ns=ns_b).replace("/train", "/nope"), headers=admin)
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["error"] == missing.json()["error"] == "workload_not_found"
        assert (await client.get(path.format(ns=ns_b) + "/phase", headers=bob)).status_code == 404
        assert (await _graphql(client, bob, ONE, ns=ns_b))["data"]["workload"] is None
        assert (await _graphql(client, bob, ONE, ns=ns_a))["data"]["workload"] == {"name": "train"}

        everything = {(n["namespace"]) for n in (await _graphql(client, admin, LIST))["data"]["workloads"]["nodes"]}
        assert {ns_a, ns_b} <= everything
        assert (await client.get(path.format(ns=ns_b), headers=admin)).status_code == 200

        deep = "{ workloads { nodes { components { " + "children { " * 47 + "name" + " }" * 47 + " } } } }"
        refused = await _graphql(client, bob, deep)
        assert "exceeds maximum operation depth" in refused["errors"][0]["message"]
        assert (await client.get("/api/v1/workloads", headers=bob)).json()["count"] == 1


async def test_registration_needs_create_on_kartas_and_is_written_as_the_caller(k8s_control_plane: Any,
                                                                                tmp_path: Path) -> None:
    cp = k8s_control_plane
    async with cluster_setup(cp, tmp_path) as env:
        kube: httpx.AsyncClient = env["kube"]
        name = f"wmap-auth-{env['suffix']}"
        text = yaml.safe_dump(jobset_definition(name))
        grant = f"wmap-test-bob-kartas-{env['suffix']}"
        bob = _bearer(cp, "bob")
        register = "mutation($doc: String!) { registerDefinition(definition: $doc) { ok problems { message } } }"
        try:
            async with auth_server(env["kubeconfig"], tmp_path / "s1") as client:
                refused = await client.post("/api/v1/definitions", content=text, headers=bob | YAML_BODY)
                assert refused.status_code == 403 and refused.json()["error"] == "forbidden", refused.text
                body = await _graphql(client, bob, register, doc=text)
                assert body["errors"][0]["extensions"] == {"code": "FORBIDDEN", "error": "forbidden"}
                assert (await kube.get(f"{KARTAS}/{name}")).status_code == 404  # nothing stored

                await _create(kube, f"{RBAC}/clusterroles", {
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": grant},
                    "rules": [{"apiGroups": ["run.ai"], "resources": ["kartas"],
                               "verbs": ["get", "create", "update", "delete"]}]})
                await _create(kube, f"{RBAC}/clusterrolebindings", {
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": grant},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": grant},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]})
                await _until_allowed(kube, "bob", ["team-b"], {"verb": "create", "group": "run.ai",
                                                               "resource": "kartas"})
                await asyncio.sleep(1.2)  # the server's cached "denied" (1 s in this test) expires

                created = await client.post("/api/v1/definitions", content=text, headers=bob | YAML_BODY)
                assert created.status_code == 201, created.text
                karta = (await kube.get(f"{KARTAS}/{name}")).json()
                assert karta["metadata"]["name"] == name and karta["spec"] == jobset_definition(name)["spec"]
                # the server's own identity may not create kartas (checked in cluster_setup): only the
                # write impersonating bob could be accepted; the server below, writing as itself, is refused

                removed = await client.delete(f"/api/v1/definitions/{name}", headers=bob)
                assert removed.status_code == 200, removed.text
                assert (await kube.get(f"{KARTAS}/{name}")).status_code == 404

            async with auth_server(env["kubeconfig"], tmp_path / "s2", impersonate=False) as client:
                as_server = await client.post("/api/v1/definitions", content=text, headers=bob | YAML_BODY)
                assert as_server.status_code == 503 and as_server.json()["error"] == "store_unavailable"
                assert (await kube.get(f"{KARTAS}/{name}")).status_code == 404
        finally:
            await kube.delete(f"{KARTAS}/{name}")
            await kube.delete(f"{RBAC}/clusterrolebindings/{grant}")
            await kube.delete(f"{RBAC}/clusterroles/{grant}")
