"""Admission decisions for Karta objects (no cluster: the registrar over a state directory)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.service.admission import duplicate_of, label_patch, managed_labels, validate_karta
from workload_map.registration.registrar import Registrar
from workload_map.registration.stores import DirectoryStore
from workload_map.gvk import GVK
from tests.api.test_mutations import broken, jobset_definition

JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")


@pytest.fixture
def registrar(tmp_path: Path) -> Registrar:
    return Registrar(DefinitionRegistry(load_catalog(default_catalog_dir())), DirectoryStore(tmp_path))


async def test_valid_karta_is_allowed(registrar: Registrar) -> None:
    verdict = await validate_karta(registrar, "CREATE", jobset_definition(), None, [])
    assert verdict.allowed, verdict.message


async def test_broken_karta_names_each_field(registrar: Registrar) -> None:
    verdict = await validate_karta(registrar, "CREATE", broken(jobset_definition()), None, [])
    assert not verdict.allowed
    assert 'Karta "my-jobset" is invalid' in verdict.message
    assert "spec.structureDefinition.childComponents[0].ownerRef" in verdict.message
    assert "spec.structureDefinition.childComponents[0].instanceIdPath" in verdict.message


async def test_second_karta_for_the_same_gvk_is_refused_naming_the_first(registrar: Registrar) -> None:
    first = jobset_definition("first")
    verdict = await validate_karta(registrar, "CREATE", jobset_definition("second"), None, [first])
    assert not verdict.allowed
    assert verdict.message == ('a Karta for group "jobset.x-k8s.io" version "v1alpha2" kind "JobSet" already exists '
                               '("first"); only one Karta per group/version/kind is allowed')
    other_version = jobset_definition("second")
    other_version["spec"]["structureDefinition"]["rootComponent"]["kind"]["version"] = "v1"
    assert (await validate_karta(registrar, "CREATE", other_version, None, [first])).allowed
    # updating the first one is no duplicate of itself
    assert (await validate_karta(registrar, "UPDATE", first, first, [first])).allowed


async def test_root_gvk_change_is_refused_on_update(registrar: Registrar) -> None:
    old = jobset_definition()
    new = copy.deepcopy(old)
    new["spec"]["structureDefinition"]["rootComponent"]["kind"]["version"] = "v1"
    verdict = await validate_karta(registrar, "UPDATE", new, old, [old])
    assert not verdict.allowed
    assert verdict.message.startswith("spec.structureDefinition.rootComponent.kind: the root component GVK is immutable")


async def test_edited_managed_label_is_refused(registrar: Registrar) -> None:
    doc: dict[str, Any] = jobset_definition()
    doc["metadata"]["labels"] = {"karta.run.ai/kind": "PyTorchJob"}
    verdict = await validate_karta(registrar, "UPDATE", doc, jobset_definition(), [])
    assert not verdict.allowed and 'label "karta.run.ai/kind"' in verdict.message and '"JobSet"' in verdict.message
    assert (await validate_karta(registrar, "DELETE", doc, None, [])).allowed


def test_label_patch_adds_labels_or_fixes_the_wrong_ones() -> None:
    doc = jobset_definition()
    assert label_patch(doc) == [{"op": "add", "path": "/metadata/labels", "value": managed_labels(JOBSET)}]
    assert managed_labels(JOBSET)["karta.run.ai/group"] == "jobset.x-k8s.io"
    doc["metadata"]["labels"] = {**managed_labels(JOBSET), "karta.run.ai/kind": "Other", "team": "a"}
    assert label_patch(doc) == [{"op": "add", "path": "/metadata/labels/karta.run.ai~1kind", "value": "JobSet"}]
    doc["metadata"]["labels"]["karta.run.ai/kind"] = "JobSet"
    assert label_patch(doc) == []


def test_duplicate_ignores_rootless_documents() -> None:
    assert duplicate_of({"metadata": {"name": "x"}}, [jobset_definition()]) is None
