"""Schema parity: every field of the REST/JSON view has its GraphQL field.

The JSON shapes are collected from ``WorkloadView.to_dict()`` of every workload in the
bundled sample (75 workloads of every catalog type, so optional keys such as ``min``,
``reason``, ``replicaKey`` and gang ``key`` appear) and walked key by key against the
GraphQL types reached from ``Query.workload``. Differences are listed in ``RENAMED`` and
``SHAPES`` below (the documented mapping); any other JSON key without a GraphQL field fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import GraphQLList, GraphQLNonNull, GraphQLObjectType, build_schema, get_named_type

from workload_map.graphql.schema import sdl
from workload_map.cli.main import build_registry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService

RENAMED: dict[tuple[str, str], str] = {
    ("Workload", "uid"): "id",  # metadata.uid is the GraphQL ID
}
"""``(GraphQL type, JSON key) -> GraphQL field`` where the names differ."""

KEYED_LISTS: dict[str, str] = {
    "ResourceQuantity": "name",  # JSON {"nvidia.com/gpu": "4"} -> [{name, quantity}]
    "GpuResource": "resource",  # JSON {"nvidia.com/gpu": {...figures}} -> [{resource, ...figures}]
}
"""JSON objects keyed by a resource name become GraphQL lists with the key as a field."""

SCHEMA = build_schema(sdl())
"""The GraphQL schema as committed in ``schema/schema.graphql`` (the drift test keeps them equal)."""

NAME_LISTS = {"pods"}
"""JSON lists of pod names (roles, instances) are GraphQL lists of ``Pod`` (its ``name``)."""


def _unwrap(gql_type: Any) -> tuple[Any, bool]:
    """(named type, is a list) of a field type."""
    t = gql_type.of_type if isinstance(gql_type, GraphQLNonNull) else gql_type
    is_list = isinstance(t, GraphQLList)
    return get_named_type(t), is_list


def _walk(value: Any, gql_type: GraphQLObjectType, path: str, missing: list[str]) -> None:
    """Check every key of the JSON object ``value`` against ``gql_type``'s fields."""
    for key, item in value.items():
        field_name = RENAMED.get((gql_type.name, key), key)
        field = gql_type.fields.get(field_name)
        where = f"{path}.{key}"
        if field is None:
            missing.append(f"{where} (no {gql_type.name}.{field_name})")
            continue
        named, is_list = _unwrap(field.type)
        if not isinstance(named, GraphQLObjectType):
            continue  # scalar or enum
        if isinstance(item, dict) and is_list and named.name in KEYED_LISTS:
            assert KEYED_LISTS[named.name] in named.fields, f"{named.name} lacks its key field"
            for sub in item.values():
                if isinstance(sub, dict):
                    _walk(sub, named, f"{where}[*]", missing)
        elif isinstance(item, dict):
            _walk(item, named, where, missing)
        elif isinstance(item, list):
            for element in item:
                if isinstance(element, dict):
                    _walk(element, named, f"{where}[]", missing)
                elif key in NAME_LISTS:
                    assert "name" in named.fields, f"{where}: {named.name} has no name field"


def _sample_views() -> list[dict[str, Any]]:
    from workload_map.config import Settings

    sample = Settings().sample_dir
    if not sample.exists():
        pytest.skip(f"bundled sample missing: {sample}")
    service = WorkloadService(build_registry(), SnapshotReader.from_paths(sample))
    return [v.to_dict() for v in service.workloads()]


def test_every_rest_field_has_a_graphql_field() -> None:
    views = _sample_views()
    # 75 workloads in the bundled sample (server/workload_map/sample/README.md): a smaller count means
    # the walk below covered fewer shapes than intended.
    assert len(views) >= 70
    workload = SCHEMA.type_map["Workload"]
    missing: list[str] = []
    for view in views:
        _walk(view, workload, view["kind"], missing)
    assert sorted(set(missing)) == []


def test_walk_reports_a_missing_field() -> None:
    """The walk itself fails on a key GraphQL lacks (so the parity test can fail)."""
    missing: list[str] = []
    role = SCHEMA.type_map["Role"]
    _walk({"name": "x", "noSuchField": 1, "replicas": {"desired": 1, "extra": 2}}, role, "Role", missing)
    assert missing == ["Role.noSuchField (no Role.noSuchField)", "Role.replicas.extra (no Replicas.extra)"]


ROLES = """{ workload(namespace: "ml", group: "jobset.x-k8s.io", kind: "JobSet", name: "train") {
  roles { name nodes podResources { gpus cpuMillis memoryBytes } } } }"""


async def test_role_nodes_and_pod_resources_equal_the_rest_view(client: Any) -> None:
    from tests.api.conftest import gql

    body = await gql(client, ROLES)
    roles = body["data"]["workload"]["roles"]
    # The fixture: leader pod on node-a, worker-0 pod on node-a, worker-1 pod not scheduled;
    # every pod requests cpu 2 (2000 m), memory 8Gi (8 * 2**30 = 8589934592 B), 4 GPUs.
    per_pod = {"gpus": 4.0, "cpuMillis": 2000.0, "memoryBytes": 8589934592.0}
    assert roles == [{"name": "leader", "nodes": ["node-a"], "podResources": per_pod},
                     {"name": "worker", "nodes": ["node-a"], "podResources": per_pod}]
    rest = (await client.get("/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/train")).json()
    assert [(r["name"], r["nodes"], r["podResources"]["gpus"]) for r in rest["roles"]] == [
        (r["name"], r["nodes"], r["podResources"]["gpus"]) for r in roles]
