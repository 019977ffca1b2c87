"""The framework-free registration path (workload_map.service): what GraphQL and REST both call."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.extensions import UNKNOWN_WHEN_ANNOTATION, annotation
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import (
    Conflict,
    DefinitionNotFound,
    DefinitionsTooLarge,
    InvalidDefinition,
    InvalidRequest,
    TooManyDefinitions,
)
from workload_map.gvk import GVK
from workload_map.registration.following import REGISTERED_AT
from workload_map.registration.registrar import GVK_LABELS, Registrar, register_document
from workload_map.registration.stores import DirectoryStore

JOBSET = GVK("jobset.x-k8s.io", "v1alpha2", "JobSet")


def registrar(state: Path) -> Registrar:
    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    return Registrar(registry, DirectoryStore(state), trial_timeout=0)


def jobset_doc(name: str) -> dict[str, Any]:
    doc = copy.deepcopy(load_catalog(default_catalog_dir()).find("jobset").definition.manifest)
    doc["metadata"] = {"name": name}
    return doc


async def test_register_document_stores_labels_and_keeps_the_first_time(tmp_path: Path) -> None:
    r = registrar(tmp_path)
    first = await register_document(r, jobset_doc("team-jobset"))
    assert (first.created, first.dry_run) == (True, False)
    assert first.entry is not None and (first.entry.origin, first.entry.key) == ("state", "team-jobset")
    stored = yaml.safe_load((tmp_path / "team-jobset.yaml").read_text())
    labels = stored["metadata"]["labels"]
    # both spellings of each of the three GVK labels: 3 x 2 = 6 labels with the JobSet GVK's parts
    assert {label: labels[label] for pair in GVK_LABELS for label in pair} == {
        "karta.run.ai/group": "jobset.x-k8s.io", "run.ai/karta-group": "jobset.x-k8s.io",
        "karta.run.ai/version": "v1alpha2", "run.ai/karta-version": "v1alpha2",
        "karta.run.ai/kind": "JobSet", "run.ai/karta-kind": "JobSet"}
    registered_at = stored["metadata"]["annotations"][REGISTERED_AT]
    again = await register_document(r, jobset_doc("team-jobset"))
    assert again.created is False  # a replacement keeps the first registration time
    assert yaml.safe_load((tmp_path / "team-jobset.yaml").read_text())["metadata"]["annotations"][REGISTERED_AT] \
        == registered_at
    # the registered definition now wins over the catalog for the JobSet GVK
    assert (r.registry.lookup(JOBSET) or pytest.fail("no JobSet entry")).origin == "state"


async def test_a_change_of_annotations_alone_replaces_the_entry_and_the_same_document_keeps_it(tmp_path: Path) -> None:
    # the extensions (nested kinds, unknown-when, ...) and the aliases are annotations, read
    # from the manifest that definition equality leaves out: a change of them alone must
    # reach the registry now, not only the store (read again at the next start)
    r = registrar(tmp_path)
    first = await register_document(r, jobset_doc("team-jobset"))
    same = await register_document(r, jobset_doc("team-jobset"))
    assert same.entry is first.entry  # nothing changed: the entry (and its views) stay
    doc = jobset_doc("team-jobset")
    doc["metadata"]["annotations"] = {UNKNOWN_WHEN_ANNOTATION: '"no runtime"', "workload-map.run.ai/aliases": "tj"}
    changed = await register_document(r, doc)
    assert changed.created is False and changed.entry is not first.entry
    entry = r.registry.lookup(JOBSET) or pytest.fail("no JobSet entry")
    assert (annotation(entry.definition, UNKNOWN_WHEN_ANNOTATION), annotation(entry.definition, "workload-map.run.ai/aliases")) \
        == ('"no runtime"', "tj")
    assert entry.registered_at == first.entry.registered_at  # still the first registration's time
    doc["metadata"]["labels"] = {"team": "llm"}  # labels alone: the definitions API answers them
    relabelled = await register_document(r, doc)
    assert relabelled.entry is not changed.entry
    assert (r.registry.lookup(JOBSET) or pytest.fail("no JobSet entry")).definition.manifest["metadata"]["labels"]["team"] \
        == "llm"


async def test_dry_run_stores_nothing_and_entry_of_shows_the_would_be_entry(tmp_path: Path) -> None:
    r = registrar(tmp_path)
    outcome = await register_document(r, jobset_doc("dry"), dry_run=True)
    assert outcome.entry is None and outcome.dry_run and not list(tmp_path.iterdir())
    entry = r.entry_of(outcome)
    assert (entry.origin, entry.key, entry.definition.name) == ("state", "dry", "dry")


async def test_guards_alias_bomb_and_engine_crash(tmp_path: Path) -> None:
    r = registrar(tmp_path)
    # 9 levels of 10 aliases each expand to 10**9 values, far above the 250,000 limit
    bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))
    bomb += "apiVersion: run.ai/v1alpha1\nkind: Karta\n"
    with pytest.raises(InvalidRequest, match="more than 250000 values"):
        await register_document(r, bomb)
    with pytest.raises(InvalidDefinition):  # `kind: {}` made the parser hash a dict (a TypeError)
        await register_document(r, "apiVersion: run.ai/v1alpha1\nkind: {}\nmetadata: {name: x}\nspec: {}\n")
    assert not list(tmp_path.iterdir())


async def test_unregister_refuses_the_catalog_and_unknown_names(tmp_path: Path) -> None:
    r = registrar(tmp_path)
    with pytest.raises(Conflict, match="JobSet.jobset.x-k8s.io is built in"):
        await r.unregister("jobset-x-k8s-io-jobset-v1alpha2")
    with pytest.raises(DefinitionNotFound):
        await r.unregister("no-such-definition")
    await register_document(r, jobset_doc("mine"))
    with pytest.raises(Conflict, match="already registered for"):
        await register_document(r, jobset_doc("second-name"))
    removed = await r.unregister("mine")
    assert removed.key == "mine" and not (tmp_path / "mine.yaml").exists()
    assert (r.registry.lookup(JOBSET) or pytest.fail("no JobSet entry")).origin == "catalog"


async def test_a_stored_file_that_fails_validation_is_skipped_not_raised(tmp_path: Path) -> None:
    good, bad = jobset_doc("good"), jobset_doc("bad")
    bad["spec"]["structureDefinition"]["childComponents"][0]["ownerRef"] = "nobody"
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(good))
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    r = registrar(tmp_path)
    await r.load_stored()
    assert [e.key for e in r.registry.registered("state")] == ["good"]
    (skipped,) = r.skipped.values()
    assert skipped.key == "bad" and any("nobody" in p.message for p in skipped.problems)


async def test_a_name_taken_by_another_type_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    r = registrar(tmp_path)
    rayjob = copy.deepcopy(load_catalog(default_catalog_dir()).find("rayjob").definition.manifest)
    rayjob["metadata"] = {"name": "jobset-x-k8s-io-jobset-v1alpha2"}  # the JobSet catalog entry's name
    with pytest.raises(Conflict, match="taken by the catalog definition for jobset.x-k8s.io/v1alpha2"):
        await register_document(r, rayjob)
    await register_document(r, jobset_doc("team-defs"))
    rayjob["metadata"] = {"name": "team-defs"}  # a registered JobSet definition's name
    with pytest.raises(Conflict, match="taken by the state definition"):
        await register_document(r, rayjob)
    assert [e.key for e in r.registry.registered()] == ["team-defs"] and sorted(p.name for p in tmp_path.iterdir()) \
        == ["team-defs.yaml"]
    # the catalog name for the catalog's own type is still an override, not a conflict
    fresh = registrar(tmp_path / "fresh")
    assert (await register_document(fresh, jobset_doc("jobset-x-k8s-io-jobset-v1alpha2"), dry_run=True)).dry_run


def kind_doc(index: int) -> dict[str, Any]:
    """The JobSet definition for a made-up root kind ``Kind<index>.example.com`` (one GVK each)."""
    doc = jobset_doc(f"kind-{index}")
    doc["spec"]["structureDefinition"]["rootComponent"]["kind"] = {"group": "example.com", "version": "v1",
                                                                   "kind": f"Kind{index}"}
    return doc


async def test_the_number_of_definitions_is_capped(tmp_path: Path) -> None:
    r = registrar(tmp_path)
    r.max_definitions = 2
    for index in range(2):
        await register_document(r, kind_doc(index))
    with pytest.raises(TooManyDefinitions, match="2 definitions are registered, the limit of this server"):
        await register_document(r, kind_doc(2))
    await register_document(r, kind_doc(1))  # replacing one is not one more
    assert (await register_document(r, kind_doc(2), dry_run=True)).dry_run  # a dry run stores nothing
    await r.unregister("kind-0")
    await register_document(r, kind_doc(2))  # room again
    assert sorted(p.stem for p in tmp_path.iterdir()) == ["kind-1", "kind-2"]


async def test_the_total_size_of_definitions_is_capped(tmp_path: Path) -> None:
    r = registrar(tmp_path)
    await register_document(r, kind_doc(0))
    one = r._sizes["kind-0"]  # its stored JSON size (the JobSet definition, about 4 KB plus labels)
    r.max_definitions_bytes = 2 * one + one // 2  # room for two of about this size, not three
    await register_document(r, kind_doc(1))
    with pytest.raises(DefinitionsTooLarge, match="above the limit of"):
        await register_document(r, kind_doc(2))
    assert sorted(p.stem for p in tmp_path.iterdir()) == ["kind-0", "kind-1"]
