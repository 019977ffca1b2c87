"""Run:ai workload-type bodies translated by the service layer, without HTTP."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

import pytest

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import Conflict, InvalidDefinition, InvalidRequest
from workload_map.registration.registrar import Registrar
from workload_map.registration.stores import DirectoryStore
from workload_map.registration.workload_types import (
    TYPE_ANNOTATION,
    register_workload_type,
    runai_documents,
    type_id,
    unregister_workload_type,
)


def jobset_spec() -> dict[str, Any]:
    return copy.deepcopy(load_catalog(default_catalog_dir()).find("jobset").definition.manifest["spec"])


def body(**extra: Any) -> dict[str, Any]:
    return {"name": "JobSet", "group": "jobset.x-k8s.io", "categoryId": "train",
            "resourceInterfaces": [{"version": "v1alpha2", "spec": jobset_spec()}], **extra}


def test_one_document_per_interface_named_by_slug_with_the_other_fields_kept() -> None:
    (doc,) = runai_documents(body())
    assert doc["metadata"]["name"] == "jobset-x-k8s-io-jobset-v1alpha2"
    assert doc["apiVersion"] == "run.ai/v1alpha1" and doc["kind"] == "Karta"
    assert '"categoryId": "train"' in doc["metadata"]["annotations"][TYPE_ANNOTATION]


def test_every_problem_at_once_with_entry_prefixes() -> None:
    bad = body(name="jobset", group="Not_A_Group")
    bad["resourceInterfaces"].append({"spec": "not an object"})
    with pytest.raises(InvalidDefinition) as caught:
        runai_documents(bad)
    paths = {p.path for p in caught.value.problems}
    # name and group are wrong, entry 0's root kind then differs from both, entry 1 is no object
    assert {"name", "group", "resourceInterfaces[1].spec",
            "resourceInterfaces[0].spec.structureDefinition.rootComponent.kind.kind"} <= paths


def test_type_id_is_a_stable_uuid_per_group_and_kind() -> None:
    first = type_id("jobset.x-k8s.io", "JobSet")
    assert first == type_id("jobset.x-k8s.io", "JobSet") and uuid.UUID(first).version == 5
    assert first != type_id("jobset.x-k8s.io", "Job") and first != type_id("", "JobSet")


async def test_register_then_remove_a_type_and_catalog_rules(tmp_path: Path) -> None:
    registrar = Registrar(DefinitionRegistry(load_catalog(default_catalog_dir())), DirectoryStore(tmp_path),
                          trial_timeout=0)
    shown, created = await register_workload_type(registrar, body())
    assert created and shown["origin"] == "state" and shown["categoryId"] == "train"
    assert shown["id"] == type_id("jobset.x-k8s.io", "JobSet")
    assert [ri["version"] for ri in shown["resourceInterfaces"]] == ["v1alpha2"]
    _, created_again = await register_workload_type(registrar, body())
    assert created_again is False
    before = await unregister_workload_type(registrar, shown["id"])
    assert before["origin"] == "state" and not list(tmp_path.glob("*.yaml"))
    with pytest.raises(Conflict):  # now only the catalog entry is left: not removable here
        await unregister_workload_type(registrar, shown["id"])
    with pytest.raises(InvalidRequest, match="not both"):
        await register_workload_type(registrar, {"catalog": "jobset", "name": "JobSet"})
    with pytest.raises(InvalidRequest, match="non-empty string"):
        await register_workload_type(registrar, {"catalog": " "})
