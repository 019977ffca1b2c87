"""WorkloadService guards: one bad object or slow definition never takes the others down."""

from __future__ import annotations

from typing import Any

from server.definitions import Phase, load_definition
from server.definitions.catalog import Catalog
from server.definitions.registry import DefinitionRegistry
from server.kube.snapshot import SnapshotReader
from server.service import WorkloadService

SLOW = {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "slow"},
        "spec": {"structureDefinition": {"rootComponent": {
            "name": "r", "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
            "statusDefinition": {"phaseDefinition": {"path": "if .spec.slow then ([limit(200000; repeat(1))] | length"
                                                             " | tostring) else \"up\" end"},
                                 "statusMappings": {"running": [{"byPhase": "up"}]}}}}}}


def demo(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Demo", "metadata": {"name": name, "namespace": "n"},
            "spec": spec}


def test_a_slow_definition_is_quarantined_after_one_slow_resolution() -> None:
    from server.definitions.load import check_definition
    from server.definitions.parse import parse_definition

    problems: list[Any] = []
    definition = parse_definition(SLOW, problems)  # `repeat` is refused by validation; bypass it on purpose
    assert definition is not None and check_definition(SLOW)[0] is None
    registry = DefinitionRegistry(Catalog([]))
    registry.register(definition, origin="file")
    reader = SnapshotReader([demo("a-slow", slow=True), demo("b-fast"), demo("c-fast")])
    service = WorkloadService(registry, reader, slow_resolution_s=0.2)  # the slow path takes ~0.4 s, others <1 ms
    views = {v.name: v for v in service.workloads()}
    assert "quarantined" in views["b-fast"].errors[0].message  # after a-slow took too long
    assert views["a-slow"].phase is Phase.UNDEFINED
    registry.register(load_definition({**SLOW, "spec": {"structureDefinition": {"rootComponent": {
        **SLOW["spec"]["structureDefinition"]["rootComponent"],
        "statusDefinition": {"phaseDefinition": {"path": ".status.p // \"up\""},
                             "statusMappings": {"running": [{"byPhase": "up"}]}}}}}}), origin="file")
    service.slow_resolution_s = 10
    assert all(v.phase is Phase.RUNNING and not v.errors for v in service.workloads())  # a fixed definition works


def test_an_object_that_breaks_resolution_is_an_error_view_not_a_failed_list(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import server.service as service_module

    definition = load_definition({**SLOW, "spec": {"structureDefinition": {"rootComponent": {
        **SLOW["spec"]["structureDefinition"]["rootComponent"],
        "statusDefinition": {"phaseDefinition": {"path": ".status.p // \"up\""},
                             "statusMappings": {"running": [{"byPhase": "up"}]}}}}}})
    registry = DefinitionRegistry(Catalog([]))
    registry.register(definition, origin="file")
    real = service_module.resolve

    def flaky(definition: Any, root: Any, **kw: Any) -> Any:
        if root["metadata"]["name"] == "bad":
            raise OverflowError("cannot convert float infinity to integer")
        return real(definition, root, **kw)

    monkeypatch.setattr(service_module, "resolve", flaky)
    views = {v.name: v for v in WorkloadService(registry, SnapshotReader([demo("bad"), demo("good")])).workloads()}
    assert views["good"].phase is Phase.RUNNING
    assert views["bad"].errors[0].message == ("resolution failed: OverflowError: cannot convert float infinity "
                                              "to integer")
