"""A service that is not started resolves bounded definitions in its own process.

``wmap describe -f`` used to fork a worker for every run to keep the time budget; a
definition whose expressions are bounded (``workload_map.jq.static.is_bounded``: no
loop, recursion or regular expression) cannot exceed it by looping, so it is resolved in
process. ``LOOP_PATH`` (``def f: f; f`` on labelled objects) is not bounded: it still goes
to the worker and gets the budget's timeout view.
"""

from __future__ import annotations

from workload_map.service import workloads as service_module
from workload_map.definitions.catalog import Catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from tests.service.support import LOOP_PATH, demo, demo_definition


def _service(path: str, objects: list[dict], timeout_s: float) -> WorkloadService:
    registry = DefinitionRegistry(Catalog([]))
    registry.register(demo_definition(path), origin="file")
    return WorkloadService(registry, SnapshotReader(objects), timeout_s=timeout_s)


def test_a_bounded_definition_is_resolved_without_a_worker() -> None:
    # `.status.p // "up"`: "wait" -> Initializing, no status -> "up" -> Running
    service = _service('.status.p // "up"', [demo("a", phase="wait"), demo("b")], timeout_s=7.25)
    phases = {v.name: [p.value for p in v.phases] for v in service.workloads()}
    assert phases == {"a": ["Initializing"], "b": ["Running"]}
    assert service_module._BLOCKING[7.25]._worker is None  # no worker was started for this budget


def test_a_looping_definition_still_gets_the_worker_and_its_budget() -> None:
    service = _service(LOOP_PATH, [demo("a", loop=True), demo("b", phase="done")], timeout_s=0.75)
    views = {v.name: v for v in service.workloads()}
    assert [p.value for p in views["b"].phases] == ["Completed"]
    assert "exceeded the 0.75 s resolution budget; the worker was ended" in str(views["a"].to_dict())
    assert service_module._BLOCKING[0.75]._worker is not None
