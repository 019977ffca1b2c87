"""Tests of the real control plane itself: CRDs, users/RBAC, restart, compaction."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from .controlplane import ControlPlane
from .crds import OWN_CRDS

pytestmark = pytest.mark.cluster

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"


def _jobset(name: str) -> dict:
    pod_template = {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36", "command": ["true"]}],
        },
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {
            # no `replicas`, no `groupName`: the real CRD defaults them (1, "default")
            "replicatedJobs": [
                {"name": "workers", "template": {"spec": {"parallelism": 2, "completions": 2,
                                                          "template": pod_template}}}
            ],
            "notAJobSetField": {"x": 1},  # pruned by the real structural schema
        },
    }


def _retry_429(send, attempts: int = 50) -> httpx.Response:
    """Repeat ``send()`` while the apiserver answers 429 (watch cache still initialising)."""
    for _ in range(attempts):
        r = send()
        if r.status_code != 429:
            return r
        time.sleep(0.2)
    return r


def test_crds_installed_and_served(k8s_control_plane: ControlPlane) -> None:
    cp = k8s_control_plane
    for spec in OWN_CRDS:
        assert spec.name in cp.installed_crds, spec.name
    with cp.client() as c:
        res = {r["name"]: r for r in c.get("/apis/run.ai/v1alpha1").json()["resources"]}
        assert res["kartas"]["kind"] == "Karta"
        assert res["kartas"]["namespaced"] is False
        assert res["kartas"].get("shortNames") == ["krt"]
        crds = c.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions").json()["items"]
    for crd in crds:
        assert len(crd["spec"]["versions"]) == 1, crd["metadata"]["name"]
        assert "conversion" not in crd["spec"] or crd["spec"]["conversion"]["strategy"] == "None"


def test_admin_creates_jobset_and_reads_defaults(k8s_control_plane: ControlPlane, namespace: str) -> None:
    cp = k8s_control_plane
    real = cp.installed_crds["jobsets.jobset.x-k8s.io"] == "shared"
    with cp.client() as c:
        r = c.post(JOBSETS.format(ns=namespace), json=_jobset("js1"))
        assert r.status_code == 201, r.text
        got = c.get(f"{JOBSETS.format(ns=namespace)}/js1").json()
    rj = got["spec"]["replicatedJobs"][0]
    pod = rj["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "busybox:1.36"
    assert got["metadata"]["uid"] and got["metadata"]["resourceVersion"]
    if real:
        assert rj["replicas"] == 1  # CRD default
        assert rj["groupName"] == "default"  # CRD default
        assert "notAJobSetField" not in got["spec"]  # pruned
    else:  # minimal CRD: preserve-unknown-fields, no defaults
        assert "replicas" not in rj
        assert got["spec"]["notAJobSetField"] == {"x": 1}


def test_status_subresource(k8s_control_plane: ControlPlane, namespace: str) -> None:
    with k8s_control_plane.client() as c:
        base = JOBSETS.format(ns=namespace)
        assert c.post(base, json=_jobset("js2")).status_code == 201
        r = c.patch(f"{base}/js2/status", content=json.dumps({"status": {"restarts": 3}}),
                    headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text
        assert c.get(f"{base}/js2").json()["status"]["restarts"] == 3
        # writes to the main resource ignore status
        r = c.patch(f"{base}/js2", content=json.dumps({"status": {"restarts": 9}}),
                    headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200 and r.json()["status"]["restarts"] == 3


def test_alice_is_authenticated_but_forbidden(k8s_control_plane: ControlPlane, namespace: str) -> None:
    with k8s_control_plane.client("alice") as c:
        assert c.get("/api/v1/pods").status_code == 403
        assert c.get(f"/api/v1/namespaces/{namespace}/pods").status_code == 403
        assert c.get("/version").status_code == 200
        who = c.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                     json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert who.status_code == 201, who.text
        info = who.json()["status"]["userInfo"]
        assert info["username"] == "alice"
        assert set(info["groups"]) >= {"team-a", "system:authenticated"}


def test_token_users(k8s_control_plane: ControlPlane) -> None:
    cp = k8s_control_plane
    with cp.client("bob") as c:
        assert c.get("/api/v1/pods").status_code == 403
        who = c.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                     json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        assert who.json()["status"]["userInfo"]["username"] == "bob"
        assert "team-b" in who.json()["status"]["userInfo"]["groups"]
    with cp.client("admin-token") as c:
        assert c.get("/api/v1/pods").status_code == 200
    with httpx.Client(base_url=cp.server, verify=cp.ssl_context("bob"), trust_env=False,
                      headers={"Authorization": "Bearer wrong"}) as c:
        assert c.get("/api/v1/pods").status_code == 401


async def test_kubeconfig_works_with_kubernetes_asyncio(k8s_control_plane: ControlPlane) -> None:
    kubernetes_asyncio = pytest.importorskip("kubernetes_asyncio")
    from kubernetes_asyncio import client, config

    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(k8s_control_plane.admin_kubeconfig),
                                  client_configuration=cfg)
    async with client.ApiClient(cfg) as api:
        names = [n.metadata.name for n in (await client.CoreV1Api(api).list_namespace()).items]
    assert "default" in names
    assert kubernetes_asyncio


def test_restart_apiserver_keeps_data(k8s_control_plane: ControlPlane, namespace: str) -> None:
    cp = k8s_control_plane
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with cp.client() as c:
        r = c.post(path, json={"metadata": {"name": "keep"}, "data": {"k": "v"}})
        assert r.status_code == 201
        before = r.json()["metadata"]
    cp.restart_apiserver()
    with cp.client() as c:
        after = c.get(f"{path}/keep").json()
    assert after["data"] == {"k": "v"}
    assert after["metadata"]["uid"] == before["uid"]
    assert after["metadata"]["resourceVersion"] == before["resourceVersion"]


def test_compact_etcd_makes_old_resource_versions_gone(k8s_control_plane: ControlPlane, namespace: str) -> None:
    cp = k8s_control_plane
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with cp.client() as c:
        assert c.post(path, json={"metadata": {"name": "a"}}).status_code == 201
        old_rv = c.get(path).json()["metadata"]["resourceVersion"]
        # before compaction the exact old list works
        r = c.get(path, params={"resourceVersion": old_rv, "resourceVersionMatch": "Exact"})
        assert r.status_code == 200, r.text
        assert c.post(path, json={"metadata": {"name": "b"}}).status_code == 201
    rev = cp.compact_etcd()
    assert rev > int(old_rv)
    with cp.client() as c:
        r = _retry_429(lambda: c.get(path, params={"resourceVersion": old_rv,
                                                  "resourceVersionMatch": "Exact"}))
        assert r.status_code == 410, r.text
        assert r.json()["reason"] == "Expired"
        r = _retry_429(lambda: c.get(path, params={"resourceVersion": old_rv, "limit": 1}))
        assert r.status_code == 410, r.text
        r = _retry_429(lambda: c.get(path, params={"watch": "1", "resourceVersion": old_rv,
                                                  "timeoutSeconds": 5}))
        if r.status_code == 200:  # the watch opened: the first event must be an ERROR 410
            event = json.loads(r.text.splitlines()[0])
            assert event["type"] == "ERROR" and event["object"]["code"] == 410, event
        else:
            assert r.status_code == 410, r.text
        # current data is still there
        assert {i["metadata"]["name"] for i in c.get(path).json()["items"]} == {"a", "b"}
