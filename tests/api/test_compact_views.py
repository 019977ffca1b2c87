"""Compacted stored views answer GraphQL and REST exactly as uncompacted ones.

The app runs twice over the bundled sample (every catalog type): once as served (views
compacted on arrival from the resolver workers: read-only containers shared between
views) and once with compaction switched off; every GraphQL field a portal reads and the
REST list must come out identical.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from workload_map.app import create_app
from workload_map.config import HttpSettings, Settings
from workload_map.kube.snapshot import SnapshotReader
from workload_map.resolution.frozen import FrozenDict
from workload_map.materialization import materializer
from tests.api.conftest import gql

RESOURCES = "{ gpus cpuMillis memoryBytes byResource { name quantity } }"
GPU = "{ requestedBySpec requestedByPods allocated unknown byResource { resource requestedBySpec requestedByPods allocated } }"
POD = f"{{ name namespace phase ready node reason component instance replicaKey unattributedReason resources {RESOURCES} }}"
REPLICAS = "{ desired current ready min max }"
COMPONENT = (f"name kind apiVersion parent logical replicas {REPLICAS} resources {RESOURCES} gpu {GPU} nodes "
             f"instances {{ id replicas {REPLICAS} podResources {RESOURCES} pods {{ name }} }} pods {POD} "
             "errors { component field expression message }")
QUERY = f"""{{ workloads(first: 500) {{ totalCount nodes {{
  id name namespace kind group version apiVersion resourceVersion cluster definition origin phase phases rawPhase
  conditions {{ type status reason message }} createdAt replicas {REPLICAS}
  roles {{ name component instance definition kind parent replicas {REPLICAS} podResources {RESOURCES}
           pods {{ name }} nodes gpu {GPU} }}
  components {{ {COMPONENT} children {{ {COMPONENT} children {{ name }} }} }}
  unattributedPods {POD} pods {{ name }} gpu {GPU} resources {RESOURCES}
  gangGroups {{ name form minMember subGroups {{ name minMember }} key pods }}
  errors {{ component field expression message }} }} }}
  ns: gpuSummary(groupBy: NAMESPACE) {{ key workloads gpu {GPU} }}
  node: gpuSummary(groupBy: NODE) {{ key workloads gpu {GPU} }} }}"""


async def _answers(settings: Settings, sample: Path) -> tuple[dict[str, Any], Any, list[Any]]:
    app = create_app(settings, reader=SnapshotReader.from_paths(sample))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        body = await gql(client, QUERY)
        rest = (await client.get("/api/v1/workloads?view=full&limit=500")).json()
        pods = [p for r in app.state.runtime.service.store.records() for p in r.view.all_pods()]
    return body, rest, pods


async def test_graphql_and_rest_answers_equal_with_and_without_compaction(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(state_dir=tmp_path / "state", http=HttpSettings(graphql_max_cost=10_000_000))
    if not settings.sample_dir.exists():
        pytest.skip(f"bundled sample missing: {settings.sample_dir}")
    compacted, rest_compacted, pods = await _answers(settings, settings.sample_dir)
    assert "errors" not in compacted, compacted.get("errors")
    total = compacted["data"]["workloads"]["totalCount"]
    assert total >= 60 and len(rest_compacted["items"]) == total  # the sample: every catalog type
    assert pods and all(type(p.requests) is FrozenDict for p in pods)  # compaction did run
    monkeypatch.setattr(materializer, "compact_view", lambda view: view)
    plain, rest_plain, pods = await _answers(settings, settings.sample_dir)
    assert pods and not any(type(p.requests) is FrozenDict for p in pods)  # and here it did not
    assert compacted == plain
    assert rest_compacted == rest_plain
