"""GraphQL mutations: register (valid, dry run, invalid with every problem), catalog, unregister."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.api.conftest import gql

CATALOG_JOBSET = Path(__file__).parents[2] / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml"

REGISTER = """mutation($doc: String!, $dry: Boolean) { registerDefinition(definition: $doc, dryRun: $dry) {
    ok dryRun created problems { path message } definition { name origin kind registeredAt } } }"""


def jobset_definition(name: str = "my-jobset") -> dict[str, Any]:
    """The catalog JobSet definition under another name."""
    doc = yaml.safe_load(CATALOG_JOBSET.read_text())
    doc["metadata"] = {"name": name}
    return doc


def broken(doc: dict[str, Any]) -> dict[str, Any]:
    """Two independent problems: an unknown ownerRef and a jq syntax error."""
    bad = copy.deepcopy(doc)
    child = bad["spec"]["structureDefinition"]["childComponents"][0]
    child["ownerRef"] = "nobody"
    child["instanceIdPath"] = ".spec.replicatedJobs[ | .name"
    return bad


async def _workload_definition(client: httpx.AsyncClient) -> tuple[str, str, float]:
    body = await gql(client, """{ workload(namespace: "ml", group: "jobset.x-k8s.io", kind: "JobSet", name: "train")
        { definition origin gpu { requestedBySpec } } }""")
    w = body["data"]["workload"]
    return w["definition"], w["origin"], w["gpu"]["requestedBySpec"]


async def test_register_valid_definition_replaces_the_catalog_entry(client: httpx.AsyncClient, settings) -> None:
    body = await gql(client, REGISTER, doc=yaml.safe_dump(jobset_definition()))
    result = body["data"]["registerDefinition"]
    assert result["ok"] and result["created"] and result["problems"] == []
    assert result["definition"]["name"] == "my-jobset" and result["definition"]["origin"] == "state"
    assert await _workload_definition(client) == ("my-jobset", "state", 12)
    stored = settings.state_dir / "my-jobset.yaml"
    assert stored.is_file() and yaml.safe_load(stored.read_text())["metadata"]["name"] == "my-jobset"
    again = (await gql(client, REGISTER, doc=yaml.safe_dump(jobset_definition())))["data"]["registerDefinition"]
    assert again["ok"] and not again["created"]


async def test_dry_run_stores_nothing(client: httpx.AsyncClient, settings) -> None:
    result = (await gql(client, REGISTER, doc=yaml.safe_dump(jobset_definition()), dry=True))["data"][
        "registerDefinition"]
    assert result["ok"] and result["dryRun"]
    assert not (settings.state_dir / "my-jobset.yaml").exists()
    assert (await _workload_definition(client))[1] == "catalog"


async def test_invalid_definition_lists_every_problem_and_keeps_the_previous(client: httpx.AsyncClient) -> None:
    await gql(client, REGISTER, doc=yaml.safe_dump(jobset_definition()))
    result = (await gql(client, REGISTER, doc=yaml.safe_dump(broken(jobset_definition()))))["data"][
        "registerDefinition"]
    assert not result["ok"] and result["definition"] is None
    paths = {p["path"] for p in result["problems"]}
    assert "spec.structureDefinition.childComponents[0].ownerRef" in paths
    assert "spec.structureDefinition.childComponents[0].instanceIdPath" in paths
    assert await _workload_definition(client) == ("my-jobset", "state", 12)


async def test_unparseable_text_is_a_problem_not_an_error(client: httpx.AsyncClient) -> None:
    result = (await gql(client, REGISTER, doc="a: [b"))["data"]["registerDefinition"]
    assert not result["ok"] and "YAML" in result["problems"][0]["message"]


async def test_register_catalog_type_and_unregister(client: httpx.AsyncClient, settings) -> None:
    body = await gql(client, """mutation { registerCatalogType(name: "jobset") { ok definition { name origin } } }""")
    assert body["data"]["registerCatalogType"] == {
        "ok": True, "definition": {"name": "jobset-x-k8s-io-jobset-v1alpha2", "origin": "state"}}
    assert (await _workload_definition(client))[1] == "state"
    unknown = await gql(client, """mutation { registerCatalogType(name: "nope") { ok problems { message } } }""")
    assert not unknown["data"]["registerCatalogType"]["ok"]
    gone = await gql(client, """mutation { unregisterDefinition(name: "jobset-x-k8s-io-jobset-v1alpha2") { ok } }""")
    assert gone["data"]["unregisterDefinition"]["ok"]
    assert (await _workload_definition(client))[1] == "catalog"
    assert not (settings.state_dir / "jobset-x-k8s-io-jobset-v1alpha2.yaml").exists()
    missing = await gql(client, """mutation { unregisterDefinition(name: "never") { ok problems { message } } }""")
    assert "no registered definition" in missing["data"]["unregisterDefinition"]["problems"][0]["message"]


async def test_second_name_for_the_same_kind_conflicts(client: httpx.AsyncClient) -> None:
    await gql(client, REGISTER, doc=yaml.safe_dump(jobset_definition("first")))
    result = (await gql(client, REGISTER, doc=yaml.safe_dump(jobset_definition("second"))))["data"][
        "registerDefinition"]
    assert not result["ok"] and "already registered" in result["problems"][0]["message"]
