"""The rendered chart against the real test API server (``k8s_control_plane``).

1. Every rendered object, with default values and with every toggle on, is accepted by a
   server-side dry run (``dryRun=All``, strict field validation). The ServiceMonitor gets a
   minimal ``monitoring.coreos.com`` CRD; the Karta CRD, which the session control plane
   already serves, is checked with a dry-run server-side apply.
2. The chart's RBAC is enough and no more: the ServiceAccount, ClusterRoles and bindings are
   created for real; acting as that service account (``Impersonate-User`` from the admin client)
   every resource the server watches can be listed and watched, Karta registration writes are
   allowed, and writes outside the role are refused with 403.
3. The server's own ``InformerCache`` runs under the service account's identity (a TokenRequest
   token in a kubeconfig) and every informer syncs; without the bindings they end ``forbidden``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from .clusterkit import (RBAC_KINDS, Resources, access, as_user, can_watch, request_token, service_account_user,
                         wait_rbac)
from .helm import CHART_DIR, run_helm, template
from .kinds import CATALOG_DIR, GVK, KARTA, POD, guess_plural, watched_gvks
from .rbac import expected_rules

pytestmark = pytest.mark.cluster

TOGGLES = {"podDisruptionBudget": {"enabled": True}, "networkPolicy": {"enabled": True},
           "serviceMonitor": {"enabled": True}, "auth": {"mode": "kubernetes"},
           "impersonation": {"enabled": True}, "replicaCount": 2,
           "extraDefinitions": {"x.yaml": {"apiVersion": "run.ai/v1alpha1", "kind": "Karta"}}}
# the other new values: egress rules, hard anti-affinity, ephemeral storage, the helm test Pod
EGRESS = {"networkPolicy": {"enabled": True, "egress": {"enabled": True, "apiServerCIDRs": ["10.96.0.1/32"],
                                                        "extraTo": [{"ports": [{"port": 3128}]}]}},
          "replicaCount": 3, "podAntiAffinity": "hard", "rbac": {"allowRegistration": False},
          "tmpDirSizeLimit": "128Mi"}
# the Karta admission webhooks with a chart-generated CA (cert-manager is not part of the test plane)
WEBHOOK = {"webhook": {"enabled": True, "failurePolicy": "Ignore"}, "networkPolicy": {"enabled": True}}
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SERVICE_MONITOR_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "servicemonitors.monitoring.coreos.com", "labels": {"wmap.test/crd-source": "deploy"}},
    "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
             "names": {"kind": "ServiceMonitor", "listKind": "ServiceMonitorList", "plural": "servicemonitors",
                       "singular": "servicemonitor"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


# ---- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def service_monitor_crd(k8s_control_plane: Any, admin: httpx.Client) -> None:
    """A minimal ServiceMonitor CRD (the Prometheus Operator is not part of the test plane)."""
    if admin.get(f"{CRD_PATH}/{SERVICE_MONITOR_CRD['metadata']['name']}").status_code == 404:
        k8s_control_plane.create_crd(SERVICE_MONITOR_CRD)


# ---- 1. dry run -----------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [{}, TOGGLES, {"namespaces": ["__NS__"], "auth": {"mode": "none"}}, EGRESS,
                                    WEBHOOK],
                         ids=["defaults", "toggles-on", "allow-list-auth-none", "egress-anti-affinity", "webhook"])
def test_rendered_objects_pass_server_side_dry_run(admin: httpx.Client, helm: Path, namespace: str,
                                                   service_monitor_crd: None, values: dict,
                                                   tmp_path: Path) -> None:
    if "namespaces" in values:
        values = {**values, "namespaces": [namespace]}
    objects = template(helm, release="dry", namespace=namespace, values=values, tmp_path=tmp_path)
    resources = Resources(admin)
    kinds = set()
    for obj in objects:
        kinds.add(obj["kind"])
        params = {"dryRun": "All", "fieldValidation": "Strict"}
        if obj["kind"] == "CustomResourceDefinition":
            # already served by the session control plane: a dry-run apply validates it as an update
            path = f"{resources.collection(obj)}/{obj['metadata']['name']}"
            r = admin.patch(path, json=obj, params={**params, "fieldManager": "wmap-test", "force": "true"},
                            headers={"Content-Type": "application/apply-patch+yaml"})
            assert r.status_code == 200, f"CRD dry-run apply: {r.status_code} {r.text[:2000]}"
            continue
        r = admin.post(resources.collection(obj), json=obj, params=params)
        assert r.status_code == 201, f"{obj['kind']} {obj['metadata']['name']}: {r.status_code} {r.text[:2000]}"
        assert r.json()["metadata"]["name"] == obj["metadata"]["name"]
    if values is TOGGLES:
        assert {"PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor", "ConfigMap"} <= kinds
    if values is WEBHOOK:
        assert {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Secret"} <= kinds
    assert "Pod" in kinds  # the helm test hook
    # dry run stored nothing
    assert admin.get(f"/apis/apps/v1/namespaces/{namespace}/deployments").json()["items"] == []


def test_helm_install_and_uninstall(helm: Path, k8s_control_plane: Any, admin: httpx.Client, namespace: str,
                                    tmp_path: Path) -> None:
    """helm itself against the API server: a server-side dry-run install, then a real install and
    uninstall (the session plane already serves kartas.run.ai, so the chart does not manage it)."""
    name = f"i{secrets.token_hex(3)}"
    common = ["--namespace", namespace, "--kubeconfig", str(k8s_control_plane.admin_kubeconfig)]
    out = run_helm(helm, "install", name, str(CHART_DIR), *common, "--dry-run=server", home=tmp_path)
    assert out.returncode != 0 and "kartas.run.ai" in out.stderr and "exists" in out.stderr, out.stderr
    try:
        out = run_helm(helm, "install", name, str(CHART_DIR), *common, "--set", "installKartaCRD=false",
                       home=tmp_path)
        assert out.returncode == 0, out.stderr
        assert "STATUS: deployed" in out.stdout and "kubectl -n " + namespace + " rollout status" in out.stdout
        r = admin.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}-workload-map-server")
        assert r.status_code == 200 and r.json()["metadata"]["annotations"]["meta.helm.sh/release-name"] == name
    finally:
        out = run_helm(helm, "uninstall", name, *common, "--timeout", "60s", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert admin.get(f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}-workload-map-server").status_code == 404


# ---- 2. RBAC is sufficient ------------------------------------------------------------------------



def test_service_account_can_list_and_watch_everything_the_server_watches(
        admin: httpx.Client, release: Any, namespace: str) -> None:
    rel = release()
    rel.create(*RBAC_KINDS)
    sa = as_user(service_account_user(rel, namespace))
    wait_rbac(admin, sa, "", "pods")
    wait_rbac(admin, sa, "run.ai", "kartas", "create")
    resources = Resources(admin)
    targets = sorted(watched_gvks()) + [("apiextensions.k8s.io", "v1", "CustomResourceDefinition")]
    checked = []
    for gvk in targets:
        found = resources.find(gvk)
        if found is None:
            # the test control plane has no CRD for it: the authorizer still answers for the plural
            plural = guess_plural(gvk[2])
            for verb in ("get", "list", "watch"):
                assert access(admin, sa, verb, gvk[0], plural), f"{verb} {gvk[0]}/{plural} (not served here)"
            continue
        base, plural, namespaced = found
        paths = [f"{base}/{plural}"] + ([f"{base}/namespaces/{namespace}/{plural}"] if namespaced else [])
        for path in paths:
            r = admin.get(path, params={"limit": "1"}, headers=sa)
            assert r.status_code == 200, f"list {path} as the service account: {r.status_code} {r.text[:500]}"
            assert can_watch(admin, path, sa) == 200, f"watch {path} as the service account"
        checked.append(plural)
    assert {"pods", "kartas", "customresourcedefinitions", "jobsets", "jobs"} <= set(checked)


def test_service_account_has_exactly_the_chart_rules(admin: httpx.Client, release: Any, namespace: str) -> None:
    rel = release()
    rel.create(*RBAC_KINDS)
    sa = as_user(service_account_user(rel, namespace))
    wait_rbac(admin, sa, "", "pods")
    wait_rbac(admin, sa, "authentication.k8s.io", "tokenreviews", "create")
    for (group, resource), verbs in expected_rules(auth="kubernetes").items():
        where = namespace if resource == "leases" else ""  # the status Lease: a Role in the release namespace
        for verb in verbs:
            assert access(admin, sa, verb, group, resource, where), f"{verb} {group}/{resource} should be allowed"
    for verb, group, resource in [("create", "", "pods"), ("delete", "jobset.x-k8s.io", "jobsets"),
                                  ("patch", "batch", "jobs"), ("get", "", "secrets"), ("list", "", "configmaps"),
                                  ("patch", "run.ai", "kartas"), ("update", "run.ai", "kartas/status"),
                                  ("create", "apiextensions.k8s.io", "customresourcedefinitions"),
                                  ("impersonate", "", "users"), ("impersonate", "", "serviceaccounts"),
                                  ("create", "", "serviceaccounts/token")]:
        assert not access(admin, sa, verb, group, resource), f"{verb} {group}/{resource} should be denied"


def test_writes_outside_the_role_are_refused(admin: httpx.Client, release: Any, namespace: str) -> None:
    rel = release()
    rel.create(*RBAC_KINDS)
    sa = as_user(service_account_user(rel, namespace))
    wait_rbac(admin, sa, "", "pods")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "intruder"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    r = admin.post(f"/api/v1/namespaces/{namespace}/pods", json=pod, headers=sa)
    assert r.status_code == 403, r.text
    r = admin.delete(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets/some-jobset", headers=sa)
    assert r.status_code == 403, r.text
    r = admin.get(f"/api/v1/namespaces/{namespace}/secrets", headers=sa)
    assert r.status_code == 403, r.text
    r = admin.post(CRD_PATH, json={"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                                   "metadata": {"name": "x.example.com"}}, headers=sa, params={"dryRun": "All"})
    assert r.status_code == 403, r.text
    # registration writes Kartas: allowed (dry run, nothing stored)
    # the catalog's JobSet spec: valid under the chart's Karta CRD and under a looser one another
    # test may have installed (the test is about RBAC, not validation)
    spec = yaml.safe_load((CATALOG_DIR / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())["spec"]
    karta = {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": f"k-{rel.name}"}, "spec": spec}
    r = admin.post("/apis/run.ai/v1alpha1/kartas", json=karta, headers=sa, params={"dryRun": "All"})
    assert r.status_code == 201, r.text
    # auth.mode=kubernetes: the caller checks are allowed
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "not-a-token"}}
    r = admin.post("/apis/authentication.k8s.io/v1/tokenreviews", json=review, headers=sa)
    assert r.status_code == 201 and r.json()["status"].get("authenticated") is not True, r.text


def test_impersonation_needs_the_toggle(admin: httpx.Client, release: Any, namespace: str,
                                        k8s_control_plane: Any) -> None:
    off = release()
    off.create(*RBAC_KINDS)
    on = release(("impersonation.enabled=true",))
    on.create(*RBAC_KINDS)
    sa_off = as_user(service_account_user(off, namespace))
    sa_on = as_user(service_account_user(on, namespace))
    wait_rbac(admin, sa_on, "", "users", "impersonate")
    assert not access(admin, sa_off, "impersonate", "", "users")
    for resource in ("users", "groups", "serviceaccounts"):
        assert access(admin, sa_on, "impersonate", "", resource)
    # for real, with the service accounts' own tokens
    for rel, expected in ((off, 403), (on, 200)):
        token = request_token(admin, namespace, service_account_user(rel, namespace).rsplit(":", 1)[1])
        with httpx.Client(base_url=k8s_control_plane.server, verify=k8s_control_plane.ssl_context("bob"),
                          headers={"Authorization": f"Bearer {token}", "Impersonate-User": "alice"},
                          trust_env=False, timeout=30) as c:
            r = c.get("/apis/authorization.k8s.io/v1")  # any request: impersonation is checked first
            assert r.status_code == expected, f"{rel.name}: {r.status_code} {r.text[:300]}"


def test_namespace_allow_list_limits_workload_reads(admin: httpx.Client, release: Any, namespace: str) -> None:
    rel = release((f"namespaces={{{namespace}}}",))
    rel.create(*RBAC_KINDS)
    sa = as_user(service_account_user(rel, namespace))
    wait_rbac(admin, sa, "", "pods", namespace=namespace)
    wait_rbac(admin, sa, "run.ai", "kartas")
    assert admin.get(f"/api/v1/namespaces/{namespace}/pods", headers=sa).status_code == 200
    assert can_watch(admin, f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets", sa) == 200
    assert admin.get("/api/v1/pods", headers=sa).status_code == 403
    assert admin.get("/api/v1/namespaces/default/pods", headers=sa).status_code == 403
    assert admin.get("/apis/run.ai/v1alpha1/kartas", headers=sa).status_code == 200


# ---- 3. the server's informers under the service account ---------------------------------------

async def run_informers(kubeconfig: Path, gvks: list[GVK], namespaces: tuple[str, ...] = ()) -> dict[GVK, Any]:
    """Start the server's InformerCache on ``gvks``; return the states after syncing (30 s max)."""
    from workload_map.gvk import GVK as ServerGVK
    from workload_map.kube.cache import CacheOptions, InformerCache

    cache = await InformerCache.from_config(str(kubeconfig), options=CacheOptions(namespaces=namespaces))
    try:
        for gvk in gvks:
            cache.watch(ServerGVK(*gvk))
        await cache.start()
        await cache.wait_synced(30)
        deadline = time.monotonic() + 30  # the CRD reflector does not count for is_synced()
        while (crd := cache.crd_status()) is not None and crd.state == "syncing" and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        states = {(s.gvk.group, s.gvk.version, s.gvk.kind): s for s in cache.states().values()}
        crd = cache.crd_status()
        if crd is not None:
            states[("apiextensions.k8s.io", "v1", "CustomResourceDefinition")] = crd
        return states
    finally:
        await cache.stop()


@pytest.mark.parametrize("allow_list", [False, True], ids=["all-namespaces", "allow-list"])
async def test_informer_cache_syncs_as_the_service_account(admin: httpx.Client, release: Any, namespace: str,
                                                           k8s_control_plane: Any, tmp_path: Path,
                                                           allow_list: bool) -> None:
    pytest.importorskip("workload_map.kube.cache", reason="the server's InformerCache is not available")
    from tests.cluster.kubeconfig import write_kubeconfig

    rel = release((f"namespaces={{{namespace}}}",) if allow_list else ())
    rel.create(*RBAC_KINDS)
    user = service_account_user(rel, namespace)
    wait_rbac(admin, as_user(user), "", "pods", namespace=namespace)
    token = request_token(admin, namespace, user.rsplit(":", 1)[1])
    kubeconfig = write_kubeconfig(tmp_path / "sa.yaml", k8s_control_plane.server, k8s_control_plane.ca_file,
                                  "wmap-sa", token=token)
    gvks = sorted(watched_gvks())
    not_served = {g for g in gvks if Resources(admin).find(g) is None}  # no CRD in the test plane
    states = await run_informers(kubeconfig, gvks, (namespace,) if allow_list else ())
    bad = {g: (s.state, s.last_error) for g, s in states.items()
           if s.state != "synced" and not (g in not_served and s.state == "crd_missing")}
    assert not bad, f"informers not synced under {user}: {bad}"
    assert set(gvks) <= set(states) and POD in states and KARTA in states


async def test_informer_cache_without_the_bindings_is_forbidden(admin: httpx.Client, namespace: str,
                                                                k8s_control_plane: Any, tmp_path: Path) -> None:
    pytest.importorskip("workload_map.kube.cache", reason="the server's InformerCache is not available")
    from tests.cluster.kubeconfig import write_kubeconfig

    r = admin.post(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                   json={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "unbound"}})
    assert r.status_code == 201, r.text
    token = request_token(admin, namespace, "unbound")
    kubeconfig = write_kubeconfig(tmp_path / "unbound.yaml", k8s_control_plane.server, k8s_control_plane.ca_file,
                                  "unbound", token=token)
    states = await run_informers(kubeconfig, [POD, KARTA])
    assert states[POD].state == "forbidden" and states[KARTA].state == "forbidden", states


def test_allow_registration_false_refuses_karta_writes(admin: httpx.Client, release: Any, namespace: str) -> None:
    rel = release(sets=("rbac.allowRegistration=false",))
    rel.create(*RBAC_KINDS)
    sa = as_user(service_account_user(rel, namespace))
    wait_rbac(admin, sa, "run.ai", "kartas", "watch")
    for verb in ("get", "list", "watch"):
        assert access(admin, sa, verb, "run.ai", "kartas"), f"{verb} kartas should stay allowed"
    for verb in ("create", "update", "delete", "patch"):
        assert not access(admin, sa, verb, "run.ai", "kartas"), f"{verb} kartas should be denied"
    # the catalog's JobSet spec: valid under the chart's Karta CRD and under a looser one another
    # test may have installed (the test is about RBAC, not validation)
    spec = yaml.safe_load((CATALOG_DIR / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())["spec"]
    karta = {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": f"k-{rel.name}"}, "spec": spec}
    r = admin.post("/apis/run.ai/v1alpha1/kartas", json=karta, headers=sa, params={"dryRun": "All"})
    assert r.status_code == 403, r.text
