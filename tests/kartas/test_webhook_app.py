"""The webhook app's AdmissionReview contract (in process, over a snapshot reader)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from workload_map.app import create_app, webhook_app
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader
from tests.api.test_mutations import broken, jobset_definition


def review(operation: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "0d3c-uid", "operation": operation, "object": obj, "oldObject": old}}


@pytest.fixture
async def client(tmp_path: Path) -> Any:
    app = create_app(Settings(state_dir=tmp_path), reader=SnapshotReader([jobset_definition("existing")]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=webhook_app(app)), base_url="https://t") as c:
        yield c


async def test_refusal_echoes_uid_and_carries_the_message(client: httpx.AsyncClient) -> None:
    r = await client.post("/validate-karta", json=review("CREATE", broken(jobset_definition("bad"))))
    assert r.status_code == 200
    body = r.json()
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    response = body["response"]
    assert response["uid"] == "0d3c-uid" and response["allowed"] is False
    assert response["status"]["code"] == 422
    assert "spec.structureDefinition.childComponents[0].ownerRef" in response["status"]["message"]


async def test_duplicate_of_a_karta_the_reader_holds(client: httpx.AsyncClient) -> None:
    r = await client.post("/validate-karta", json=review("CREATE", jobset_definition("again")))
    assert r.json()["response"]["allowed"] is False
    assert '("existing")' in r.json()["response"]["status"]["message"]
    # an update of the existing one itself is allowed
    same = jobset_definition("existing")
    assert (await client.post("/validate-karta", json=review("UPDATE", same, same))).json()["response"]["allowed"]


async def test_mutation_is_a_base64_json_patch(client: httpx.AsyncClient) -> None:
    r = await client.post("/mutate-karta", json=review("CREATE", jobset_definition("new")))
    response = r.json()["response"]
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    (op,) = json.loads(base64.b64decode(response["patch"]))
    assert op["op"] == "add" and op["path"] == "/metadata/labels"
    assert op["value"]["karta.run.ai/kind"] == "JobSet" and op["value"]["run.ai/karta-version"] == "v1alpha2"


async def test_not_a_review_is_400(client: httpx.AsyncClient) -> None:
    assert (await client.post("/validate-karta", content=b"{")).status_code == 400
    assert (await client.post("/mutate-karta", json={"request": {}})).status_code == 400
    assert (await client.get("/livez")).status_code == 200
