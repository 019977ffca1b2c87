"""The Karta CRD (deploy/crds/kartas.run.ai.yaml) in a real kube-apiserver.

The session control plane (``k8s_control_plane``) already serves a minimal, schemaless
``kartas.run.ai`` that other tests rely on, so these tests start their own small control plane
(same binaries, about 5 s) holding only this CRD. Every catalog definition must be accepted as a
Karta with strict field validation (no field pruned); broken ones are rejected with the schema's
and the CEL rules' messages.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from .kinds import catalog_documents

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = REPO_ROOT / "deploy" / "crds" / "kartas.run.ai.yaml"
KARTAS = "/apis/run.ai/v1alpha1/kartas"
STRICT = {"fieldValidation": "Strict"}
SEED = "jobset-x-k8s-io-jobset-v1alpha2.yaml"

pytestmark = pytest.mark.cluster


def load_crd() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(CRD_FILE.read_text()) if d]
    assert len(docs) == 1
    return docs[0]


@pytest.fixture(scope="module")
def crd_plane() -> Iterator[Any]:
    """A fresh control plane with only the Karta CRD of deploy/crds installed."""
    from tests.cluster.binaries import find_binaries, missing_message
    from tests.cluster.controlplane import ControlPlane

    bins = find_binaries()
    if bins is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and {missing_message()}", pytrace=False)
        pytest.skip(missing_message())
    cp = ControlPlane(bins.kube_apiserver, bins.etcd, prefix="wmap-crd-")
    try:
        cp.start()
        cp.create_crd(load_crd())
    except BaseException:
        print(cp.log_tails())
        cp.stop()
        raise
    yield cp
    cp.stop()


@pytest.fixture
def client(crd_plane: Any) -> Iterator[httpx.Client]:
    with crd_plane.client() as c:
        yield c


def seed() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load((REPO_ROOT / "catalog" / SEED).read_text()))


def create(client: httpx.Client, doc: dict[str, Any], name: str) -> httpx.Response:
    body = {**doc, "metadata": {**doc.get("metadata", {}), "name": name}}
    return client.post(KARTAS, json=body, params=STRICT)


def test_crd_shape() -> None:
    crd = load_crd()
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "kartas.run.ai"
    assert spec["group"] == "run.ai" and spec["scope"] == "Cluster"
    assert spec["names"] == {"kind": "Karta", "listKind": "KartaList", "plural": "kartas", "singular": "karta",
                             "shortNames": ["krt"]}
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    assert [(c["name"], c["jsonPath"]) for c in version["additionalPrinterColumns"]] == [
        ("Kind", ".spec.structureDefinition.rootComponent.kind.kind"),
        ("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        ("Workloads", ".status.workloads"),
        ("Age", ".metadata.creationTimestamp"),
        ("Root Component", ".spec.structureDefinition.rootComponent.name")]
    assert "x-kubernetes-preserve-unknown-fields" not in yaml.safe_dump(version["schema"])


def test_crd_is_established_and_discoverable(client: httpx.Client) -> None:
    r = client.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/kartas.run.ai")
    conds = {c["type"]: c["status"] for c in r.json()["status"]["conditions"]}
    assert conds["Established"] == "True" and conds["NamesAccepted"] == "True"
    assert conds.get("NonStructuralSchema", "False") == "False"
    resources = client.get("/apis/run.ai/v1alpha1").json()["resources"]
    karta = next(r for r in resources if r["name"] == "kartas")
    assert karta["namespaced"] is False and karta["shortNames"] == ["krt"]
    assert any(r["name"] == "kartas/status" for r in resources)


@pytest.mark.parametrize("file_name, doc", catalog_documents(), ids=[n for n, _ in catalog_documents()])
def test_every_catalog_definition_is_accepted(client: httpx.Client, file_name: str, doc: dict[str, Any]) -> None:
    name = doc["metadata"]["name"]
    r = create(client, doc, name)
    assert r.status_code == 201, f"{file_name}: {r.status_code} {r.text[:3000]}"
    # strict validation: nothing unknown (it would be a 422), no warning about pruned fields
    assert "unknown field" not in r.headers.get("warning", ""), r.headers.get("warning")
    stored = r.json()
    assert stored["spec"]["structureDefinition"] == _with_defaults(doc["spec"]["structureDefinition"])
    assert stored["spec"].get("optimizationInstructions") == doc["spec"].get("optimizationInstructions")
    client.delete(f"{KARTAS}/{name}")


def test_condition_field_names_get_their_defaults(client: httpx.Client) -> None:
    doc = seed()
    r = create(client, doc, "defaults")
    assert r.status_code == 201, r.text
    cd = r.json()["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["conditionsDefinition"]
    assert cd == {"path": ".status.conditions", "typeFieldName": "type", "statusFieldName": "status",
                  "messageFieldName": "message", "reasonFieldName": "reason"}
    table = client.get(KARTAS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns[:6] == ["Name", "Kind", "Ready", "Workloads", "Age", "Root Component"]
    row = next(row["cells"] for row in table["rows"] if row["cells"][0] == "defaults")
    assert row[1] == "JobSet" and row[5] == "jobset"  # no status written here: Ready and Workloads empty
    client.delete(f"{KARTAS}/defaults")


def _type_selector(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["spec"]["structureDefinition"]["childComponents"][0]["podSelector"]["componentTypeSelector"]


def test_value_without_key_path_is_rejected_by_cel(client: httpx.Client) -> None:
    doc = seed()
    _type_selector(doc).clear()
    _type_selector(doc).update({"value": "worker", "matchLabels": {"app": "x"}})
    r = create(client, doc, "bad-value")
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert "componentTypeSelector" in message and "value requires keyPath" in message
    assert "at least one of keyPath or matchLabels" not in message


def test_empty_type_selector_breaks_both_cel_rules(client: httpx.Client) -> None:
    doc = seed()
    _type_selector(doc).clear()
    _type_selector(doc)["value"] = "worker"
    r = create(client, doc, "bad-empty")
    assert r.status_code == 422
    message = r.json()["message"]
    assert "at least one of keyPath or matchLabels must be set" in message
    assert "value requires keyPath" in message


def test_missing_root_component_is_rejected(client: httpx.Client) -> None:
    doc = seed()
    del doc["spec"]["structureDefinition"]["rootComponent"]
    r = create(client, doc, "bad-root")
    assert r.status_code == 422
    assert "spec.structureDefinition.rootComponent: Required value" in r.json()["message"]


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: _type_selector(d).update(keyPath=""),
     "componentTypeSelector.keyPath in body should be at least 1 chars long"),
    (lambda d: _type_selector(d).update(matchLabels={}), "matchLabels in body should have at least 1 properties"),
    (lambda d: d["spec"]["structureDefinition"]["rootComponent"]["suspendDefinition"].update(suspendActions=[]),
     "suspendActions in body should have at least 1 items"),
    (lambda d: d["spec"]["structureDefinition"]["rootComponent"].pop("statusDefinition"),
     "rootComponent.statusDefinition: Required value"),
    (lambda d: d["spec"]["structureDefinition"]["rootComponent"]["kind"].pop("version"),
     "rootComponent.kind.version: Required value"),
    (lambda d: d["spec"]["structureDefinition"]["childComponents"].append(
        copy.deepcopy(d["spec"]["structureDefinition"]["childComponents"][0])),
     "childComponents[1]: Duplicate value"),
    (lambda d: d["spec"]["structureDefinition"].update(additionalChildKinds=[
        {"group": "", "version": "v1", "kind": "Service"}, {"group": "", "version": "v1", "kind": "Service"}]),
     "additionalChildKinds[1]: Duplicate value"),
    (lambda d: d["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"].update(
        running=[{"byExpression": {"expression": ".x"}}]), "byExpression.expectedResult: Required value"),
    (lambda d: d["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"].update(
        failed=[{"byConditions": [{"status": "True"}]}]), "byConditions[0].type: Required value"),
    (lambda d: d["spec"]["optimizationInstructions"]["gangScheduling"]["podGroup"].update(
        topology={"topologyName": "t"}), "podGroup.topology.preferredTopologyLevel: Required value"),
    (lambda d: d["spec"]["structureDefinition"]["rootComponent"].update(replicas=3),
     'unknown field "spec.structureDefinition.rootComponent.replicas"'),
], ids=["keyPath-minLength", "matchLabels-minProperties", "suspendActions-minItems", "root-statusDefinition",
        "gvk-version", "childComponents-map-key", "additionalChildKinds-map-key", "byExpression-expectedResult",
        "byConditions-type", "topology-fields", "unknown-field-strict"])
def test_schema_rules(client: httpx.Client, mutate: Any, expected: str) -> None:
    doc = seed()
    mutate(doc)
    r = create(client, doc, "bad-schema")
    assert r.status_code in (400, 422), r.text[:2000]  # 400: strict decoding (unknown field)
    assert expected in r.json()["message"], r.json()["message"]


def test_status_conditions_via_the_status_subresource(client: httpx.Client) -> None:
    r = create(client, seed(), "with-status")
    assert r.status_code == 201
    obj = r.json()
    obj["status"] = {"conditions": [{"type": "Validated", "status": "True", "reason": "ValidationSucceeded",
                                     "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z",
                                     "observedGeneration": 1}]}
    r = client.put(f"{KARTAS}/with-status/status", json=obj, params=STRICT)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["conditions"][0]["reason"] == "ValidationSucceeded"
    obj = r.json()
    obj["status"]["conditions"][0]["status"] = "Maybe"
    r = client.put(f"{KARTAS}/with-status/status", json=obj)
    assert r.status_code == 422 and "Unsupported value: \"Maybe\"" in r.json()["message"]
    client.delete(f"{KARTAS}/with-status")


def _with_defaults(structure: dict[str, Any]) -> dict[str, Any]:
    """``structure`` with the CRD defaults applied (condition field names)."""
    out = copy.deepcopy(structure)
    defaults = {"typeFieldName": "type", "statusFieldName": "status", "messageFieldName": "message",
                "reasonFieldName": "reason"}
    for comp in [out["rootComponent"], *(out.get("childComponents") or [])]:
        cd = (comp.get("statusDefinition") or {}).get("conditionsDefinition")
        if cd is not None:
            for k, v in defaults.items():
                cd.setdefault(k, v)
    return out
