"""The Karta admission webhooks called by the real kube-apiserver over TLS on 127.0.0.1.

The server runs in the test's loop (main app plus the webhook listener with a certificate for
127.0.0.1 from a test CA); Validating- and MutatingWebhookConfigurations point the API server at
``https://127.0.0.1:PORT/...`` with that CA as ``caBundle``. An ``objectSelector`` on a label
unique to the test keeps every other test's Kartas away from this webhook; both configurations
are deleted at the end. ``kubectl apply`` is used when a working kubectl is on PATH, otherwise
the API server's create call (what kubectl apply sends for a new object).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import secrets
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml

from workload_map.app import webhook_app
from workload_map.gvk import KARTA_GVK
from tests.api.live import wait_until
from tests.api.test_mutations import broken, jobset_definition
from tests.kartas.certs import serving_pair
from tests.kartas.support import KARTAS, patch_karta, poll, widget_karta, widget_kind, wmap_server

pytestmark = pytest.mark.cluster
HOOKS = "/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations"


@contextlib.asynccontextmanager
async def webhook_listener(app: Any, cert: Path, key: Path) -> AsyncIterator[int]:
    """The webhook app over TLS on a free loopback port; yields the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(webhook_app(app), log_config=None, lifespan="off",
                                           ssl_certfile=str(cert), ssl_keyfile=str(key)))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_until(lambda: server.started or task.done(), 10)
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


def hook_configs(name: str, port: int, ca: bytes, selector: dict[str, str]) -> dict[str, dict[str, Any]]:
    bundle = base64.b64encode(ca).decode()
    out = {}
    for kind, hook, path in (("validating", "validate", "/validate-karta"), ("mutating", "mutate", "/mutate-karta")):
        out[kind] = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": f"{kind.title()}WebhookConfiguration",
                     "metadata": {"name": name}, "webhooks": [{
                         "name": f"{hook}.kartas.run.ai",
                         "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
                         "timeoutSeconds": 15, "objectSelector": {"matchLabels": selector},
                         "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle},
                         "rules": [{"apiGroups": ["run.ai"], "apiVersions": ["v1alpha1"], "resources": ["kartas"],
                                    "operations": ["CREATE", "UPDATE"], "scope": "Cluster"}]}]}
    return out


def kubectl() -> str | None:
    """A kubectl that runs (``kubectl version --client``), else None."""
    path = shutil.which("kubectl")
    if path is None:
        return None
    try:
        ok = subprocess.run([path, "version", "--client"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return None
    return path if ok else None


def labelled(doc: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"].setdefault("labels", {}).update(selector)
    return doc


async def test_webhook_refuses_broken_duplicate_and_gvk_change_and_stamps_labels(
        k8s_control_plane: Any, namespace: str, tmp_path: Path) -> None:
    cp = k8s_control_plane
    token = f"t{secrets.token_hex(4)}"  # a letter first: "12e4" would be a number to kubectl's YAML reader (a label value)
    selector = {"wmap.test/webhook": token}
    group, _ = widget_kind()
    first, second, bad = f"first-{token}", f"second-{token}", f"broken-{token}"
    cert, key, ca = serving_pair(tmp_path)
    async with cp.async_client() as kube, wmap_server(cp, tmp_path / "state", namespace) as (app, _), \
            webhook_listener(app, cert, key) as port:
        configs = hook_configs(f"wmap-test-{token}", port, ca, selector)
        try:
            for kind, body in configs.items():
                r = await kube.post(HOOKS.format(kind=kind), json=body)
                assert r.status_code == 201, r.text
            # the API server reads webhook configurations through an informer: wait until both are in force
            probe = labelled(broken(jobset_definition(f"probe-{token}")), selector)
            await poll(lambda: _refused(kube, probe), 30)
            valid = labelled(widget_karta(first, group), selector)
            r = await poll(lambda: _created_with_labels(kube, valid), 30)

            # labels stamped by the mutating webhook: both spellings, from the root GVK
            labels = r.json()["metadata"]["labels"]
            assert labels["karta.run.ai/group"] == group and labels["run.ai/karta-group"] == group
            assert labels["karta.run.ai/version"] == "v1" and labels["karta.run.ai/kind"] == "Widget"
            assert labels["wmap.test/webhook"] == token

            # a broken Karta: kubectl apply fails with our message naming the fields
            doc = labelled(broken(jobset_definition(bad)), selector)
            message = await _apply_refused(cp, kube, doc, tmp_path)
            assert 'admission webhook "validate.kartas.run.ai" denied the request' in message
            assert f'Karta "{bad}" is invalid' in message
            assert "spec.structureDefinition.childComponents[0].ownerRef" in message
            assert (await kube.get(f"{KARTAS}/{bad}")).status_code == 404

            # a second Karta for the same group/version/kind, once the cache has the first one
            reader = app.state.runtime.reader
            await poll(lambda: _has(reader, first), 30)
            r = await kube.post(KARTAS, json=labelled(widget_karta(second, group), selector))
            assert r.status_code >= 400
            assert (f'a Karta for group "{group}" version "v1" kind "Widget" already exists ("{first}")'
                    in r.json()["message"])

            # the root GVK cannot change on update
            r = await patch_karta(kube, first, {"spec": {"structureDefinition": {"rootComponent": {
                "kind": {"version": "v2"}}}}})
            assert r.status_code >= 400
            assert "the root component GVK is immutable" in r.json()["message"]

            # removing or editing a managed label: the mutating webhook puts it back
            r = await patch_karta(kube, first, {"metadata": {"labels": {
                "karta.run.ai/kind": None, "karta.run.ai/group": "elsewhere.example.com", "team": "a"}}})
            assert r.status_code == 200, r.text
            labels = r.json()["metadata"]["labels"]
            assert labels["karta.run.ai/kind"] == "Widget" and labels["karta.run.ai/group"] == group
            assert labels["team"] == "a"  # other labels are the author's
        finally:
            for kind, body in configs.items():
                await kube.delete(f"{HOOKS.format(kind=kind)}/{body['metadata']['name']}")
            for name in (first, second, bad, f"probe-{token}"):
                await kube.delete(f"{KARTAS}/{name}")


async def _refused(kube: httpx.AsyncClient, doc: dict[str, Any]) -> bool:
    """Create ``doc`` (broken): True once the validating webhook refuses it; an accepted one is deleted."""
    r = await kube.post(KARTAS, json=doc)
    if r.status_code == 201:
        await kube.delete(f"{KARTAS}/{doc['metadata']['name']}")
        return False
    return "denied the request" in r.text


async def _created_with_labels(kube: httpx.AsyncClient, doc: dict[str, Any]) -> httpx.Response | None:
    """Create ``doc``; the response once the mutating webhook stamped it (else delete and retry)."""
    r = await kube.post(KARTAS, json=doc)
    assert r.status_code in (201, 409), r.text
    if r.status_code == 201 and "karta.run.ai/kind" in r.json()["metadata"].get("labels", {}):
        return r
    await kube.delete(f"{KARTAS}/{doc['metadata']['name']}")
    return None


async def _has(reader: Any, name: str) -> bool:
    return any(o["metadata"]["name"] == name for o in reader.list(KARTA_GVK))


async def _apply_refused(cp: Any, kube: httpx.AsyncClient, doc: dict[str, Any], tmp: Path) -> str:
    """Create ``doc`` with kubectl apply (or the API server's create call); returns the error text."""
    binary = kubectl()
    if binary is None:
        r = await kube.post(KARTAS, json=doc)
        assert r.status_code >= 400, r.text
        return f'admission webhook {r.json()["message"].partition("admission webhook ")[2]}'
    path = tmp / "broken.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = await asyncio.to_thread(subprocess.run, [binary, "--kubeconfig", str(cp.admin_kubeconfig), "apply", "-f",
                                                   str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0, out.stdout
    return out.stderr
