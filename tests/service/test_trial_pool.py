"""The registration trial is a job of the served resolver pool (issue 26 item 3).

A started ``WorkloadService`` attaches its pool to its ``Sandbox``; a registrar given that
sandbox runs its trial jobs on the very workers that resolve workloads, under the same
budget, crash and kill policy. The Demo kind (``tests.service.support``): ``.status.p``
``wait`` -> Initializing, ``done`` -> Completed.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from workload_map.definitions.catalog import Catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import InvalidDefinition
from workload_map.kube.snapshot import SnapshotReader
from workload_map.registration.registrar import Registrar
from workload_map.registration.stores import DirectoryStore
from workload_map.service.workloads import WorkloadService
from tests.service.support import demo, demo_definition

LOOPING: dict[str, Any] = {
    "apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "hangs"},
    "spec": {"structureDefinition": {"rootComponent": {
        "name": "r", "kind": {"group": "example.com", "version": "v1", "kind": "Other"},
        "statusDefinition": {"phaseDefinition": {"path": "def f: f; f"},
                             "statusMappings": {"running": [{"byPhase": "up"}]}}}}}}
PHASE_PATH = "spec.structureDefinition.rootComponent.statusDefinition.phaseDefinition.path"


async def _busy(pool: Any) -> list[int]:
    """The pids of the pool's busy workers, polled until one is busy (at most 10 s)."""
    for _ in range(2000):
        if pool.busy_pids():
            return list(pool.busy_pids())
        await asyncio.sleep(0.005)
    raise AssertionError("no worker took the trial job")


async def test_a_looping_trial_shares_the_pool_its_crash_and_kill_policy_and_the_loop_serves(tmp_path: Path) -> None:
    registry = DefinitionRegistry(Catalog([]))
    registry.register(demo_definition('.status.p // "up"'), origin="file")
    reader = SnapshotReader([demo("a", phase="wait")])
    service = WorkloadService(registry, reader, workers=1, timeout_s=1.0)
    registrar = Registrar(registry, DirectoryStore(tmp_path), sandbox=service.sandbox)
    await service.start()
    try:
        assert await service.settled(30) and service.materializer is not None
        pool = service.materializer.pool
        (first,) = pool.pids()
        assert [p.value for v in service.workloads() for p in v.phases] == ["Initializing"]  # "wait"
        trial = asyncio.create_task(registrar.register(copy.deepcopy(LOOPING)))
        assert await _busy(pool) == [first]  # the trial job runs on the resolution worker
        # the event loop serves while the trial loops: a read answers, the registration waits
        assert [v.name for v in service.workloads()] == ["a"] and not trial.done()
        os.kill(first, signal.SIGKILL)  # a crash: the job is retried once on a fresh worker ...
        with pytest.raises(InvalidDefinition) as caught:
            await trial  # ... where it loops again and its worker is killed at the 1 s budget
        (problem,) = caught.value.problems
        assert problem.path == PHASE_PATH
        assert problem.message == "jq expression did not finish within 1 s on a sample object"
        assert (pool.crashes, pool.timeouts, pool.replaced) == (1, 1, 2)
        assert first not in pool.pids() and len(pool.pids()) == 1
        assert [e.key for e in registry.registered()] == ["demo"]  # "hangs" was not registered
        # the replacement worker resolves: "done" -> Completed
        reader.add(demo("a", phase="done"))
        assert await service.settled(30)
        assert [p.value for v in service.workloads() for p in v.phases] == ["Completed"]
    finally:
        await service.stop()


async def test_a_trial_before_the_service_starts_runs_on_its_offline_worker(tmp_path: Path) -> None:
    registry = DefinitionRegistry(Catalog([]))
    service = WorkloadService(registry, SnapshotReader([]), timeout_s=1.0)
    registrar = Registrar(registry, DirectoryStore(tmp_path), sandbox=service.sandbox)
    assert not service.sandbox.attached
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.create_task(tick())
    try:
        with pytest.raises(InvalidDefinition) as caught:
            await registrar.check(copy.deepcopy(LOOPING))
    finally:
        ticker.cancel()
    assert [p.path for p in caught.value.problems] == [PHASE_PATH]
    assert "did not finish within 1 s" in caught.value.problems[0].message
    assert ticks > 1  # the loop went on while the forked worker ran out of its budget


async def test_a_studio_evaluation_is_a_job_of_the_same_pool(tmp_path: Path) -> None:
    from workload_map.api.studio import run_evaluation
    from workload_map.errors import DefinitionError

    registry = DefinitionRegistry(Catalog([]))
    service = WorkloadService(registry, SnapshotReader([]), workers=1, timeout_s=1.0)
    karta = copy.deepcopy(LOOPING)
    karta["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] = "Demo"
    looping, valid = json.dumps(karta), json.dumps(karta).replace("def f: f; f", ".status.p")
    await service.start()
    try:
        assert await service.settled(30) and service.materializer is not None
        pool = service.materializer.pool
        # ".status.p" of a Demo with p "up" -> the mapping running -> Running
        answer = await run_evaluation(service.sandbox, valid, [demo("a", phase="up")], None)
        assert (answer["valid"], answer["phase"]) == (True, "Running")
        with pytest.raises(DefinitionError, match="did not finish within the resolver's budget of 1 s"):
            await run_evaluation(service.sandbox, looping, [demo("a", phase="up")], None)
        assert (pool.timeouts, pool.replaced) == (1, 1)  # killed and replaced like a resolution
        answer = await run_evaluation(service.sandbox, valid, [demo("b", phase="up")], None)
        assert answer["root"] == {"kind": "Demo", "namespace": "n", "name": "b"}
    finally:
        await service.stop()
