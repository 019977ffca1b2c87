"""Kartas that arrive without the write path (kubectl apply, state files) get the trial too."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from workload_map.definitions.catalog import Catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.registration.registrar import Registrar
from workload_map.registration.stores import DirectoryStore

KARTA: dict[str, Any] = {
    "apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "demo"},
    "spec": {"structureDefinition": {"rootComponent": {
        "name": "r", "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
        "statusDefinition": {"phaseDefinition": {"path": ".status.phase"},
                             "statusMappings": {"running": [{"byPhase": "up"}]}}}}}}


async def test_followed_karta_that_hangs_the_evaluator_is_skipped_and_others_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = copy.deepcopy(KARTA)
    bad["metadata"]["name"] = "hangs"
    bad["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] = "Other"
    bad["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["phaseDefinition"]["path"] = "def f: f; f"
    registry = DefinitionRegistry(Catalog([]))
    registrar = Registrar(registry, DirectoryStore(tmp_path), trial_timeout=2)
    reader = SnapshotReader([KARTA, bad])
    task = asyncio.create_task(registrar.follow(reader))
    try:
        for _ in range(200):
            if ("cluster", "hangs") in registrar.skipped and any(e.key == "demo" for e in registry.registered()):
                break
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
    assert [e.key for e in registry.registered()] == ["demo"]
    (problem,) = registrar.skipped[("cluster", "hangs")].problems
    assert problem.path.endswith("phaseDefinition.path") and "did not finish" in problem.message
