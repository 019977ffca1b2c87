"""GraphQL over the JobSet fixture: one workload, roles, pods, GPU figures, pagination, limits."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from workload_map.graphql.schema import sdl
from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader
from workload_map.resolution.view import Replicas as ReplicasView
from tests.api.conftest import gql
from tests.api.objects import jobset

WORKLOAD = """
query($ns: String, $name: String!) {
  workload(namespace: $ns, group: "jobset.x-k8s.io", kind: "JobSet", name: $name) {
    name namespace kind group version definition origin phase phases cluster createdAt
    roles { name component instance kind replicas { desired current ready } pods { name node phase }
            gpu { requestedBySpec requestedByPods allocated } }
    pods { name } unattributedPods { name }
    gpu { requestedBySpec requestedByPods allocated byResource { resource requestedBySpec allocated } }
    resources { gpus cpuMillis memoryBytes }
    components { name children { name } instances { id } }
    gangGroups { name minMember } errors { message }
  }
}"""


async def test_one_jobset_is_one_workload_with_two_roles_and_twelve_gpus(client: httpx.AsyncClient) -> None:
    body = await gql(client, "{ workloads { totalCount nodes { name kind } } }")
    assert body["data"]["workloads"] == {"totalCount": 1, "nodes": [{"name": "train", "kind": "JobSet"}]}
    w = (await gql(client, WORKLOAD, ns="ml", name="train"))["data"]["workload"]
    assert (w["namespace"], w["group"], w["version"], w["origin"]) == ("ml", "jobset.x-k8s.io", "v1alpha2", "catalog")
    assert w["phase"] == "INITIALIZING" and w["phases"] == ["INITIALIZING"]
    assert [r["name"] for r in w["roles"]] == ["leader", "worker"]
    leader, worker = w["roles"]
    assert leader["replicas"]["desired"] == 1 and worker["replicas"]["desired"] == 2
    assert [p["name"] for p in worker["pods"]] == ["train-worker-0-0", "train-worker-1-0"]
    assert leader["gpu"] == {"requestedBySpec": 4, "requestedByPods": 4, "allocated": 4}
    assert worker["gpu"] == {"requestedBySpec": 8, "requestedByPods": 8, "allocated": 4}
    assert len(w["pods"]) == 3 and w["unattributedPods"] == []
    assert w["gpu"]["requestedBySpec"] == 12 and w["gpu"]["requestedByPods"] == 12 and w["gpu"]["allocated"] == 8
    assert w["gpu"]["byResource"] == [{"resource": "nvidia.com/gpu", "requestedBySpec": 12, "allocated": 8}]
    # 3 pods x 2 cpu, 3 x 8 GiB: memoryBytes beyond 32-bit Int is why it is a Float
    assert w["resources"] == {"gpus": 12, "cpuMillis": 6000, "memoryBytes": 3 * 8 * 2**30}


async def test_missing_workload_is_null_not_an_error(client: httpx.AsyncClient) -> None:
    body = await gql(client, WORKLOAD, ns="ml", name="nope")
    assert body["data"]["workload"] is None and "errors" not in body


async def test_workload_without_namespace_is_null_for_a_namespaced_kind(client: httpx.AsyncClient) -> None:
    # the schema marks namespace optional: omitting it was a TypeError ("Unexpected error.")
    for args in ('', 'namespace: null, ', 'namespace: "", '):
        body = await gql(client, f'{{ workload({args}group: "jobset.x-k8s.io", kind: "JobSet", name: "train") '
                                 '{ name } }')
        assert body == {"data": {"workload": None}}, args


DEMO_DEFINITION = """
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: demo}
spec:
  structureDefinition:
    rootComponent:
      name: demo
      kind: {group: example.com, version: v1, kind: Demo}
      specDefinition: {podSpecPath: .spec.pod}
      scaleDefinition: {replicasPath: .spec.count}
      statusDefinition:
        phaseDefinition: {path: .status.state}
        statusMappings: {running: [{byPhase: up}]}
"""


async def test_cluster_scoped_workload_is_found_without_namespace(settings: Settings) -> None:
    demo = {"apiVersion": "example.com/v1", "kind": "Demo", "metadata": {"name": "d1", "uid": "u-d1"},
            "spec": {"count": 2, "pod": {"containers": [{"name": "c"}]}}}
    app = create_app(settings, reader=SnapshotReader([demo]))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        registered = await gql(client, "mutation($d: String!) { registerDefinition(definition: $d) { ok problems "
                                       "{ message } } }", d=DEMO_DEFINITION)
        assert registered["data"]["registerDefinition"]["ok"], registered
        body = await gql(client, '{ workload(group: "example.com", kind: "Demo", name: "d1") '
                                 '{ name namespace replicas { desired } } }')
    assert body == {"data": {"workload": {"name": "d1", "namespace": None, "replicas": {"desired": 2}}}}


async def test_counts_beyond_int32_are_clamped_not_nulled(settings: Settings) -> None:
    # two roles at the int32 maximum: the workload total (2^32 - 2) is beyond GraphQL Int
    objects = jobset("llm-pretrain", "ml", {"a": 1, "b": 1})
    for replicated in objects[0]["spec"]["replicatedJobs"]:
        replicated["replicas"] = 2**31 - 1
    app = create_app(settings, reader=SnapshotReader(objects))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        body = await gql(client, """{ workload(namespace: "ml", group: "jobset.x-k8s.io", kind: "JobSet",
            name: "llm-pretrain") { name replicas { desired current } roles { replicas { desired } }
            components { replicas { desired } instances { replicas { desired } } }
            gangGroups { minMember subGroups { minMember } } gpu { requestedBySpec } } }""")
        rest = (await client.get("/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/llm-pretrain")).json()
    assert "errors" not in body, body["errors"]
    w = body["data"]["workload"]
    top = 2**31 - 1
    assert w["name"] == "llm-pretrain" and w["replicas"] == {"desired": top, "current": 2}
    assert [r["replicas"]["desired"] for r in w["roles"]] == [top, top]
    assert w["components"][0]["replicas"]["desired"] == top
    assert all(g["minMember"] <= top for g in w["gangGroups"])
    assert w["gpu"]["requestedBySpec"] == 4 * 2 * top  # Float: exact
    assert rest["replicas"]["desired"] == 2 * top  # the REST view keeps the exact count


def test_int32_clamp() -> None:
    from workload_map.graphql.types import Replicas, int32

    assert [int32(v) for v in (0, 5, 2**31 - 1, 2**31, 10**12, -(2**31) - 1)] == [0, 5, 2**31 - 1, 2**31 - 1,
                                                                                  2**31 - 1, -(2**31)]
    assert Replicas.of(ReplicasView(desired=10**12, current=1, ready=0, min=None, max=10**13)).max == 2**31 - 1


@pytest.mark.parametrize(("group_by", "expected"), [
    ("NAMESPACE", [("ml", 1, 12, 12, 8)]),
    ("KIND", [("JobSet.jobset.x-k8s.io", 1, 12, 12, 8)]),
    ("PHASE", [("Initializing", 1, 12, 12, 8)]),
    # pods by node: two bound to node-a (8 GPUs), one unscheduled (4 requested, 0 allocated);
    # the one JobSet has pods in both buckets, so it is counted in each
    ("NODE", [("<unscheduled>", 1, 0, 4, 0), ("node-a", 1, 0, 8, 8)]),
])
async def test_gpu_summary(client: httpx.AsyncClient, group_by: str, expected: list[tuple]) -> None:
    body = await gql(client, """query($by: GroupBy!) { gpuSummary(groupBy: $by) {
        key workloads gpu { requestedBySpec requestedByPods allocated } } }""", by=group_by)
    rows = [(b["key"], b["workloads"], b["gpu"]["requestedBySpec"], b["gpu"]["requestedByPods"],
             b["gpu"]["allocated"]) for b in body["data"]["gpuSummary"]]
    assert rows == expected


async def test_gpu_summary_over_several_workloads(settings: Settings) -> None:
    objects = (jobset("a", "team-1", {"w": 2}, gpus=1) + jobset("b", "team-1", {"w": 1}, gpus=8, node="node-b")
               + jobset("c", "team-2", {"w": 3}, gpus=2, node=None))
    app = create_app(settings, reader=SnapshotReader(objects))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        body = await gql(client, """{ ns: gpuSummary(groupBy: NAMESPACE) { key workloads gpu { requestedBySpec allocated } }
                                     node: gpuSummary(groupBy: NODE) { key gpu { requestedByPods allocated } } }""")
    ns = {b["key"]: (b["workloads"], b["gpu"]["requestedBySpec"], b["gpu"]["allocated"]) for b in body["data"]["ns"]}
    assert ns == {"team-1": (2, 2 * 1 + 1 * 8, 10), "team-2": (1, 6, 0)}
    node = {b["key"]: (b["gpu"]["requestedByPods"], b["gpu"]["allocated"]) for b in body["data"]["node"]}
    assert node == {"node-a": (2, 2), "node-b": (8, 8), "<unscheduled>": (6, 0)}


async def test_pagination_total_count_and_cursors(settings: Settings) -> None:
    objects = [o for i in range(7) for o in jobset(f"job-{i}", "ns-b" if i % 2 else "ns-a", {"w": 1}, gpus=1)]
    app = create_app(settings, reader=SnapshotReader(objects))
    query = """query($after: String) { workloads(first: 3, after: $after) { totalCount
        edges { cursor node { namespace name } } pageInfo { hasNextPage hasPreviousPage endCursor } } }"""
    seen, after, pages = [], None, 0
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        while True:
            conn = (await gql(client, query, after=after))["data"]["workloads"]
            assert conn["totalCount"] == 7
            assert conn["pageInfo"]["hasPreviousPage"] == (after is not None)
            seen += [(e["node"]["namespace"], e["node"]["name"]) for e in conn["edges"]]
            pages += 1
            if not conn["pageInfo"]["hasNextPage"]:
                break
            after = conn["pageInfo"]["endCursor"]
        assert pages == 3 and seen == sorted(seen) and len(set(seen)) == 7
        filtered = await gql(client, '{ workloads(namespace: "ns-a") { totalCount } }')
        assert filtered["data"]["workloads"]["totalCount"] == 4
        other = await gql(client, '{ workloads(cluster: "elsewhere") { totalCount } }')
        assert other["data"]["workloads"]["totalCount"] == 0


async def test_page_size_limit_and_bad_cursor_are_clear_errors(client: httpx.AsyncClient) -> None:
    body = await gql(client, "{ workloads(first: 501) { totalCount } }")
    assert body["data"] is None and "between 1 and 500" in body["errors"][0]["message"]
    body = await gql(client, '{ workloads(after: "!!") { totalCount } }')
    assert "invalid cursor" in body["errors"][0]["message"]


async def test_filters(client: httpx.AsyncClient) -> None:
    for args, count in [('phase: INITIALIZING', 1), ('phase: RUNNING', 0), ('kind: "jobset"', 1),
                        ('group: "batch"', 0), ('definition: "jobset-x-k8s-io-jobset-v1alpha2"', 1),
                        ('namespace: "other"', 0)]:
        body = await gql(client, f"{{ workloads({args}) {{ totalCount }} }}")
        assert body["data"]["workloads"]["totalCount"] == count, args


async def test_definitions_queries(client: httpx.AsyncClient) -> None:
    body = await gql(client, """{ definitions { name kind origin components }
        definition(group: "jobset.x-k8s.io", kind: "JobSet") { name version }
        missing: definition(group: "x", kind: "Y") { name } }""")
    names = [d["name"] for d in body["data"]["definitions"]]
    assert "jobset-x-k8s-io-jobset-v1alpha2" in names
    assert body["data"]["definition"] == {"name": "jobset-x-k8s-io-jobset-v1alpha2", "version": "v1alpha2"}
    assert body["data"]["missing"] is None


async def test_limits_depth_and_aliases(client: httpx.AsyncClient) -> None:
    nested = "{ workloads { nodes { components " + "{ children " * 14 + "{ name }" + " }" * 14 + " } } }"
    body = await gql(client, nested)
    assert "exceeds maximum operation depth" in body["errors"][0]["message"]
    aliases = "{ " + " ".join(f"a{i}: definitions {{ name }}" for i in range(51)) + " }"
    body = await gql(client, aliases)
    assert "aliases" in body["errors"][0]["message"].lower()


async def test_unexpected_errors_are_masked(client: httpx.AsyncClient, app, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(app.state.runtime.service, "workloads", boom)
    body = await gql(client, "{ workloads { totalCount } }")
    assert body["errors"][0]["message"] == "Unexpected error."


async def test_graphiql_is_served(client: httpx.AsyncClient) -> None:
    response = await client.get("/graphql", headers={"Accept": "text/html"})
    assert response.status_code == 200 and "graphiql" in response.text.lower()


def test_committed_sdl_matches_the_code() -> None:
    committed = (Path(__file__).parents[2] / "schema" / "schema.graphql").read_text(encoding="utf-8")
    assert committed == sdl(), "schema/schema.graphql is stale: run `python -m workload_map.contracts --write`"


async def test_one_workload_query_latency(client: httpx.AsyncClient) -> None:
    """Measured, printed with -s; the bound only catches pathologies (memoized view)."""
    await gql(client, WORKLOAD, ns="ml", name="train")
    started = time.perf_counter()
    for _ in range(20):
        await gql(client, WORKLOAD, ns="ml", name="train")
    per_query = (time.perf_counter() - started) / 20
    print(f"one-workload query in-process: {per_query * 1000:.2f} ms")
    assert per_query < 0.5
