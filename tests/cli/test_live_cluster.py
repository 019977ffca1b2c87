"""``wmap get`` against a real kube-apiserver equals the server's lists (one top-level rule).

No controllers run in the test control plane, so the trees are created by hand with
controller ownerReferences: a JobSet owning two Jobs owning two pods each, a Deployment
owning a ReplicaSet owning two pods, plus objects of their own (a Job, a ReplicaSet, a pod)
and a Job whose controller owner (a JobSet) does not exist.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from workload_map.app import create_app
from workload_map.cli.main import main
from workload_map.config import KubeSettings, Settings

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

CONTAINER = {"name": "main", "image": "busybox:1.36"}
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}
SERVING = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [CONTAINER]}}  # restartPolicy Always


def ref(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def meta(name: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    """Metadata; ``owner`` is a created object or, without ``metadata``, an ownerReference."""
    out: dict[str, Any] = {"name": name, "labels": {"app": "x"}}
    if owner is not None:
        out["ownerReferences"] = [ref(owner) if "metadata" in owner else owner]
    return out


def create(c: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = c.post(path, json=body)
    assert r.status_code == 201, f"{path}: {r.status_code} {r.text}"
    created: dict[str, Any] = r.json()
    created.setdefault("apiVersion", body["apiVersion"])
    created.setdefault("kind", body["kind"])
    return created


def pod(name: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, owner), "spec": TEMPLATE["spec"]}


def job(name: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name, owner),
            "spec": {"parallelism": 2, "completions": 2, "template": TEMPLATE}}


def replicaset(name: str, owner: dict[str, Any] | None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta(name, owner),
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": SERVING}}


def build_trees(c: httpx.Client, ns: str) -> None:
    """The objects of the module docstring, in namespace ``ns``."""
    core, batch, apps = f"/api/v1/namespaces/{ns}", f"/apis/batch/v1/namespaces/{ns}", f"/apis/apps/v1/namespaces/{ns}"
    jobset = create(c, f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets", {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta("train", None),
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": job("t", None)["spec"]}}]}})
    for i in range(2):
        owned_job = create(c, f"{batch}/jobs", job(f"train-workers-{i}", jobset))
        for k in range(2):
            create(c, f"{core}/pods", pod(f"train-workers-{i}-{k}", owned_job))
    solo = create(c, f"{batch}/jobs", job("solo", None))
    create(c, f"{core}/pods", pod("solo-0", solo))
    missing_owner = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "gone",
                     "uid": str(uuid.uuid4()), "controller": True}
    create(c, f"{batch}/jobs", job("orphaned", missing_owner))
    deployment = create(c, f"{apps}/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("web", None),
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": SERVING}})
    rs = create(c, f"{apps}/replicasets", replicaset("web-5d8f", deployment))
    for k in range(2):
        create(c, f"{core}/pods", pod(f"web-5d8f-{k}", rs))
    create(c, f"{apps}/replicasets", replicaset("rs-solo", None))
    create(c, f"{core}/pods", pod("bare", None))


async def server_lists(kubeconfig: Path, ns: str, kinds: list[str], state_dir: Path) -> dict[str, list[str]]:
    """Names per kind from the server's REST list (the app with its live informer cache)."""
    settings = Settings(kube=KubeSettings(kubeconfig=str(kubeconfig), namespaces=(ns,)), state_dir=state_dir)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
            deadline = time.monotonic() + 60
            while (await c.get("/readyz")).status_code != 200:
                assert time.monotonic() < deadline, (await c.get("/readyz?verbose")).text
                await asyncio.sleep(0.1)
            out = {}
            for kind in kinds:
                r = await c.get(f"/api/v1/namespaces/{ns}/workloads", params={"kind": kind, "limit": 500})
                assert r.status_code == 200, r.text
                out[kind] = sorted(i["name"] for i in r.json()["items"])
            return out


def cli_list(kubeconfig: Path, ns: str, kind: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["get", kind.lower(), "-n", ns, "--kubeconfig", str(kubeconfig), "-o", "json"]) == 0
    out = capsys.readouterr().out
    return sorted(i["name"] for i in json.loads(out)["items"])


def test_wmap_get_equals_the_server_on_jobset_and_deployment_trees(k8s_control_plane: Any, namespace: str,
                                                                  tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    with k8s_control_plane.client() as c:
        build_trees(c, namespace)
    kubeconfig = k8s_control_plane.admin_kubeconfig
    kinds = ["JobSet", "Job", "Deployment", "ReplicaSet", "Pod"]
    server = asyncio.run(server_lists(kubeconfig, namespace, kinds, tmp_path / "state"))
    # By hand: train-workers-* are owned by JobSet train (exists, covered) and every pod by
    # a Job or ReplicaSet (covered); web-5d8f by Deployment web. Left of their own: JobSet
    # train, Jobs solo and orphaned (its controller JobSet "gone" does not exist), Deployment
    # web, ReplicaSet rs-solo, pod bare.
    expected = {"JobSet": ["train"], "Job": ["orphaned", "solo"], "Deployment": ["web"], "ReplicaSet": ["rs-solo"],
                "Pod": ["bare"]}
    assert server == expected
    for kind in kinds:
        assert cli_list(kubeconfig, namespace, kind, capsys) == server[kind], kind
    # Without -n, get and describe read the kubeconfig context's namespace, as kubectl does.
    config = yaml.safe_load(kubeconfig.read_text())
    current = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    current["context"]["namespace"] = namespace
    in_context = tmp_path / "kubeconfig-in-namespace.yaml"
    in_context.write_text(yaml.safe_dump(config))
    assert main(["get", "jobset", "--kubeconfig", str(in_context), "-o", "name"]) == 0
    assert capsys.readouterr().out == "jobset.jobset.x-k8s.io/train\n"
    assert main(["describe", "jobset", "train", "--kubeconfig", str(in_context), "-o", "json"]) == 0
    described = json.loads(capsys.readouterr().out)
    # JobSet train: 2 Jobs x parallelism 2 = 4 pods (created by hand, none ready: no kubelet)
    assert described["namespace"] == namespace and described["replicas"]["current"] == 4
    assert main(["get", "jobset", "--kubeconfig", str(kubeconfig), "-o", "json"]) == 0  # no namespace: default
    assert json.loads(capsys.readouterr().out)["count"] == 0
