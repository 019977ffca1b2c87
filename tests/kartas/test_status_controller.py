"""The status controller's decisions over real parts (registry, intake, snapshot reader, service), no cluster.

What it writes for a valid, a broken and a not-yet-judged Karta; the API write is the
controller's ``write`` callback, here recording the patches.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Mapping

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from workload_map.service.kartastatus import KartaStatusController
from workload_map.registration.registrar import Registrar
from workload_map.registration.stores import DirectoryStore
from tests.api.test_mutations import broken, jobset_definition
from tests.kartas.support import widget_karta


def karta(doc: dict[str, Any], generation: int) -> dict[str, Any]:
    return {**doc, "metadata": {**doc["metadata"], "generation": generation, "uid": doc["metadata"]["name"]}}


async def test_round_writes_judged_kartas_only(tmp_path: Path) -> None:
    good = karta(jobset_definition("good"), 3)
    bad = karta(broken(jobset_definition("bad")), 1)
    later = karta(widget_karta("later", "w.example.com"), 1)
    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    reader = SnapshotReader([good, bad, later])
    intake = Registrar(registry, DirectoryStore(tmp_path), trial_timeout=0)
    for obj in (good, bad):  # "later" has not been through the intake yet (its trial may be running)
        intake.apply_karta("ADDED", obj)
    written: dict[str, Mapping[str, Any]] = {}

    async def served(gvk: GVK) -> bool:
        return gvk.group == "jobset.x-k8s.io"

    async def write(name: str, status: Mapping[str, Any]) -> int:
        written[name] = status
        return 200

    controller = KartaStatusController(intake, WorkloadService(registry, reader), reader, served=served,
                                       write=write, is_leader=lambda: True)
    assert await controller.round() == 2 and set(written) == {"good", "bad"}
    conds = {c["type"]: (c["status"], c["reason"], c["observedGeneration"]) for c in written["good"]["conditions"]}
    assert conds == {"Validated": ("True", "ValidationSucceeded", 3), "CRDExists": ("True", "CRDFound", 3),
                     "Ready": ("True", "Ready", 3)}
    assert written["good"]["workloads"] == 0  # no JobSet objects in the reader
    failed = {c["type"]: c for c in written["bad"]["conditions"]}
    assert failed["Validated"]["reason"] == "ValidationFailed" and failed["Ready"]["status"] == "False"
    assert "childComponents[0].ownerRef" in failed["Validated"]["message"]
    assert controller.writes == 2


async def test_run_stops_when_cancelled_in_the_turn_a_wake_arrives(tmp_path: Path) -> None:
    # Python 3.11's asyncio.wait_for hands back the awaited result when the cancellation comes in
    # the same loop turn: the controller's loop went on waiting, and a server's shutdown (which
    # cancels it and awaits it) never ended. A wake (registry, CRD or Lease change) can come then.
    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    reader = SnapshotReader([])
    intake = Registrar(registry, DirectoryStore(tmp_path), trial_timeout=0)

    async def served(gvk: GVK) -> bool:
        return True

    async def write(name: str, status: Mapping[str, Any]) -> int:
        return 200

    controller = KartaStatusController(intake, WorkloadService(registry, reader), reader, served=served,
                                       write=write, is_leader=lambda: False, interval=30.0)
    task = asyncio.create_task(controller.run())
    for _ in range(5):  # the controller is waiting on its wake event
        await asyncio.sleep(0)
    controller.wake()
    await asyncio.sleep(0)  # the wait for the event has its result; the controller has not resumed
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    assert task in done and task.cancelled()
