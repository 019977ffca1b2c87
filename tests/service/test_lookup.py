"""Definition lookups shared by GraphQL and REST (workload_map.service.lookup)."""

from __future__ import annotations

import copy

import pytest

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.load import load_definition
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import DefinitionNotFound
from workload_map.service.lookup import definition_for, definition_named, definitions_in_force


def registry_with_two_jobset_registrations() -> DefinitionRegistry:
    catalog = load_catalog(default_catalog_dir())
    registry = DefinitionRegistry(catalog)
    for key, origin, at in (("older", "state", "2026-01-01T00:00:00Z"), ("newer", "cluster", "2026-02-01T00:00:00Z")):
        doc = copy.deepcopy(catalog.find("jobset").definition.manifest)
        doc["metadata"] = {"name": key}
        registry.register(load_definition(doc), origin=origin, key=key, registered_at=at)
    return registry


def test_in_force_shadowed_and_origin_filters() -> None:
    registry = registry_with_two_jobset_registrations()
    catalog_size = len(registry.catalog)
    in_force = definitions_in_force(registry)
    # the oldest registration replaces the catalog JobSet: still one entry per root GVK
    assert len(in_force) == catalog_size
    jobsets = [e for e in in_force if e.gvk.kind == "JobSet"]
    assert [(e.key, e.origin) for e in jobsets] == [("older", "state")]
    with_shadowed = definitions_in_force(registry, include_shadowed=True)
    assert len(with_shadowed) == catalog_size + 1 and with_shadowed[-1].key == "newer" and with_shadowed[-1].shadowed
    assert [e.key for e in definitions_in_force(registry, include_shadowed=True, origin="cluster")] == ["newer"]


def test_by_name_and_by_group_kind() -> None:
    registry = registry_with_two_jobset_registrations()
    assert definition_named(registry, "newer").origin == "cluster"  # shadowed ones are found by name too
    assert definition_named(registry, "ray-io-raycluster-v1").origin == "catalog"
    with pytest.raises(DefinitionNotFound, match="no definition named 'nope'"):
        definition_named(registry, "nope")
    found = definition_for(registry, "jobset.x-k8s.io", "jobset")
    assert found is not None and found.key == "older"
    assert definition_for(registry, "jobset.x-k8s.io", "JobSet", "v1") is None  # no v1 JobSet definition
    assert definition_for(registry, "", "Pod") is not None and definition_for(registry, "", "NoSuchKind") is None


def test_a_workload_of_a_version_no_definition_names_is_resolved_through_its_group_kind() -> None:
    # the seed JobSet written as jobset.x-k8s.io/v1 (the catalog has v1alpha2): the lookup
    # falls back across versions, so it is listed with its 3 pods and 12 GPUs; before it was
    # hidden, and its Jobs and pods with it (their owner is a covered kind): nothing listed
    from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset
    from workload_map.kube.snapshot import SnapshotReader
    from workload_map.service.workloads import WorkloadService

    jobs, pods = jobs_and_pods()
    root = jobset(status=RUNNING_STATUS)
    root["apiVersion"] = "jobset.x-k8s.io/v1"
    service = WorkloadService(DefinitionRegistry(load_catalog(default_catalog_dir())), SnapshotReader([root, *jobs, *pods]))
    assert [(v.api_version, v.kind, v.name, v.definition, len(v.all_pods()), v.gpu.to_dict()["requestedByPods"])
            for v in service.workloads()] == [
        ("jobset.x-k8s.io/v1", "JobSet", "train", "jobset-x-k8s-io-jobset-v1alpha2", 3, 12)]
