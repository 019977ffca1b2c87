"""The planned fields (``workload_map.graphql.fastpath``) give graphql-core's bytes over the bundled sample.

One app over the bundled sample answers every GraphQL question of ``tests/api/sample_answers``
(every field of every workload, page by page; ``workload(...)``, ``gpuSummary`` for every
``groupBy``, definitions, ``cluster``, ``podWorkload`` of a few pods) twice over HTTP: with
the schema's execution context (planned fields) and with the plain stoppable one
(graphql-core executes every field). The response bodies must be the same bytes.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api import sample_answers
from workload_map.graphql import fastpath
from workload_map.graphql.fastpath import FastExecution
from workload_map.graphql.schema import schema
from workload_map.graphql.stopping import StoppableExecution


def questions(pages: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """(query, variables) of every question, the workload pages' cursors from ``pages``."""
    every_page = sample_answers.ALL.format(first=sample_answers.PAGE, fields=sample_answers.WORKLOAD)
    out: list[tuple[str, dict[str, Any]]] = [(every_page, {"after": None})]
    out += [(every_page, {"after": p["data"]["workloads"]["pageInfo"]["endCursor"]}) for p in pages[:-1]]
    out += [(query, {}) for query in sample_answers.GRAPHQL.values()]
    for ns, pod in sample_answers._pods(pages):
        out.append((f'{{ podWorkload(namespace: "{ns}", name: "{pod}") {{ namespace name phase node component '
                    "instance replicaKey workload { namespace kind name phase roles { name replicas { desired } "
                    "gpu { allocated } } } gangGroups { gang { name form minMember pods } "
                    "subGroup { name minMember } } } }", {}))
    return out


async def bodies(client: httpx.AsyncClient, asked: list[tuple[str, dict[str, Any]]]) -> list[bytes]:
    out = []
    for query, variables in asked:
        response = await client.post("/graphql", json={"query": query, "variables": variables})
        assert response.status_code == 200
        out.append(response.content)
    return out


async def test_planned_and_plain_execution_give_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from workload_map.app import create_app
    from workload_map.config import ResolverSettings, Settings
    from workload_map.kube.snapshot import SnapshotReader

    assert schema.execution_context_class is FastExecution
    monkeypatch.setattr(fastpath, "_PLANS", {})  # only this test's plans (checked at the end)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp) / "state",
                            resolver=ResolverSettings(workers=1, timeout_s=120.0, quarantine_after=1000))
        app = create_app(settings, reader=SnapshotReader.from_paths(settings.sample_dir))
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
                await sample_answers._wait_ready(client)
                pages = await sample_answers._every_page(client)
                asked = questions(pages)
                fast = await bodies(client, asked)
                monkeypatch.setattr(schema, "execution_context_class", StoppableExecution)
                plain = await bodies(client, asked)
                monkeypatch.setattr(schema, "execution_context_class", FastExecution)
                again = await bodies(client, asked)
    assert [i for i, (a, b) in enumerate(zip(fast, plain)) if a != b] == []
    assert fast == again
    # and the fast answers were planned: a page's object fields (replicas, gpu) too, and a
    # pod's workload with its roles whole (no field of it takes info); roles selecting pods
    # (info: the caller's pod access) stay graphql-core's
    planned = {(parent.name, node.name.value) for parent, node, found in fastpath._PLANS.values()
               if found is not None}
    assert {("Workload", "replicas"), ("Workload", "gpu"), ("Workload", "name"), ("Workload", "phase"),
            ("PodWorkload", "workload")} <= planned
    selecting_pods = [found for parent, node, found in fastpath._PLANS.values()
                      if (parent.name, node.name.value) == ("Workload", "roles") and node.selection_set is not None
                      and any(getattr(n, "name", None) is not None and n.name.value == "pods"
                              for n in node.selection_set.selections)]
    assert selecting_pods and all(found is None for found in selecting_pods)
    # real answers: the sample's 141 workloads in pages of 50, the llm-pretrain JobSet's
    # 3 pods of 4 GPUs each allocated (12), and no question answered with errors
    first = json.loads(fast[0])["data"]["workloads"]
    assert (first["totalCount"], len(first["nodes"])) == (141, 50)
    assert len(asked) == 3 + len(sample_answers.GRAPHQL) + sample_answers.PODS_PER_ANSWER + 1
    llm = json.loads(fast[3 + list(sample_answers.GRAPHQL).index("workload-llm")])["data"]["workload"]
    assert llm["gpu"]["allocated"] == 12.0
    assert [i for i, body in enumerate(fast) if "errors" in json.loads(body)] == []
    assert sum(len(b) for b in fast) > 500_000
