"""Abuse limits over a real uvicorn on 127.0.0.1: deep, wide and long GraphQL documents,
huge bodies and slow requests are each refused with a clear error, and the server keeps
serving the next normal request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from workload_map.graphql.schema import MAX_ALIASES, MAX_DEPTH, MAX_TOKENS
from workload_map.app import create_app
from workload_map.auth.access import KubernetesAccess
from workload_map.config import AuthSettings, HttpSettings, Settings
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import JOBSET
from tests.api.live import serving
from tests.api.test_mutations import jobset_definition
from tests.auth.support import RULES, USERS, FakeReviewer, PluralReader, bearer, objects

YAML_BODY = {"Content-Type": "application/yaml"}

NORMAL = {"query": "{ workloads { totalCount nodes { name gpu { requestedBySpec } } } }"}
TEN_MB = 10 * 1024 * 1024


@pytest.fixture
async def base(tmp_path: Path) -> AsyncIterator[str]:
    """Base URL of a served app (auth none, the JobSet fixture)."""
    app = create_app(Settings(state_dir=tmp_path / "state"), reader=SnapshotReader.from_paths(JOBSET))
    async with serving(app) as host:
        yield f"http://{host}"


async def _still_serving(client: httpx.AsyncClient, base: str) -> None:
    response = await client.post(f"{base}/graphql", json=NORMAL)
    assert response.status_code == 200 and response.json()["data"]["workloads"]["totalCount"] == 1, response.text
    assert (await client.get(f"{base}/livez")).status_code == 200


def _nested(levels: int) -> str:
    """``workloads { nodes { components { children { ... { name } } } } } }`` ``levels`` deep."""
    inner = "name"
    for _ in range(levels - 3):
        inner = f"children {{ {inner} }}"
    return f"{{ workloads {{ nodes {{ components {{ {inner} }} }} }} }}"


async def _errors(client: httpx.AsyncClient, base: str, query: str) -> list[dict[str, Any]]:
    response = await client.post(f"{base}/graphql", json={"query": query}, timeout=30)
    assert response.status_code in (200, 400), response.text
    body = response.json()
    assert body.get("data") is None, body
    errors: list[dict[str, Any]] = body["errors"]
    return errors


async def test_deep_wide_and_long_documents_are_refused(base: str) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        assert MAX_DEPTH < 50 and MAX_ALIASES < 1000
        errors = await _errors(client, base, _nested(50))
        assert any("exceeds maximum operation depth" in e["message"] for e in errors), errors
        await _still_serving(client, base)
        aliases = "{ " + " ".join(f"a{i}: __typename" for i in range(1000)) + " }"
        errors = await _errors(client, base, aliases)
        assert any("aliases" in e["message"].lower() for e in errors), errors
        await _still_serving(client, base)
        long = "{ " + " ".join("__typename" for _ in range(MAX_TOKENS + 10)) + " }"
        errors = await _errors(client, base, long)
        assert any("tokens" in e["message"].lower() for e in errors), errors
        await _still_serving(client, base)
        too_many = await client.post(f"{base}/graphql", json={"query": "{ workloads(first: 100000) { totalCount } }"})
        assert "first must be between 1 and 500" in too_many.json()["errors"][0]["message"]
        await _still_serving(client, base)


async def test_a_ten_megabyte_body_is_refused_declared_or_streamed(base: str) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        for path in ("/graphql", "/api/v1/definitions"):
            response = await client.post(f"{base}{path}", content=b"x" * TEN_MB,
                                         headers={"Content-Type": "application/json"})
            assert response.status_code == 413 and response.json()["error"] == "payload_too_large", path
            await _still_serving(client, base)

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(10):
                yield b"y" * (1024 * 1024)

        try:
            streamed = await client.post(f"{base}/api/v1/definitions", content=chunks(), headers=YAML_BODY)
            assert streamed.status_code == 413 and "exceeds the limit" in streamed.json()["message"]
        except httpx.WriteError:
            pass  # the server answered and closed before the whole body was sent: also a refusal
        await _still_serving(client, base)


async def test_requests_past_their_time_budget_get_a_504_and_waits_keep_theirs(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path / "s", auth=AuthSettings(mode="kubernetes"),
                        http=HttpSettings(request_timeout_s=0.5, max_wait_s=5))
    slow = FakeReviewer(USERS, RULES, delay=2.0)
    app = create_app(settings, reader=PluralReader(objects()), access=KubernetesAccess(slow))
    async with serving(app) as host, httpx.AsyncClient(base_url=f"http://{host}", timeout=30) as client:
        response = await client.get("/api/v1/workloads", headers=bearer("bob-token"))
        assert response.status_code == 504 and response.json()["error"] == "deadline_exceeded"
        assert "0.5s" in response.json()["message"]
        assert (await client.get("/livez")).status_code == 200
        slow.delay = 0.0  # (bob's first review is still running: the next requests are root's)
        path = "/api/v1/namespaces/b/workloads/jobset.x-k8s.io/JobSet/train-b/phase"
        waited = await client.get(path, params={"wait": "Running", "timeout": "1.5s"}, headers=bearer("root-token"))
        assert waited.status_code == 408, waited.text  # its own wait, longer than the 0.5 s budget
        over = await client.get(path, params={"wait": "Running", "timeout": "6s"}, headers=bearer("root-token"))
        assert over.status_code == 400 and "at most 5s" in over.json()["message"]


async def test_a_definition_failing_on_every_object_does_not_stop_the_others(base: str) -> None:
    bad = jobset_definition("fails-at-runtime")
    root = bad["spec"]["structureDefinition"]["rootComponent"]
    root["statusDefinition"]["statusMappings"]["running"] = [
        {"byExpression": {"expression": '.spec.replicatedJobs | error("boom")', "expectedResult": "true"}}]
    bad["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = '.spec | error("no ids")'
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.post(f"{base}/api/v1/definitions", content=yaml.safe_dump(bad), headers=YAML_BODY)
        assert response.status_code == 201, response.text
        view = (await client.get(f"{base}/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/train")).json()
        assert view["definition"] == "fails-at-runtime" and view["name"] == "train"
        problems = view["errors"] + [e for c in view["components"] for e in c["errors"]]
        assert any("boom" in e["message"] or "no ids" in e["message"] for e in problems), problems
        await _still_serving(client, base)
        assert (await client.get(f"{base}/readyz")).status_code == 200
        definitions = (await client.get(f"{base}/api/v1/definitions")).json()
        assert definitions["count"] >= 10  # every other definition stays in force


async def test_concurrent_abuse_does_not_starve_normal_queries(base: str) -> None:
    deep = {"query": _nested(50)}
    async with httpx.AsyncClient(timeout=30) as client:
        bad = [client.post(f"{base}/graphql", json=deep) for _ in range(20)]
        good = [client.post(f"{base}/graphql", json=NORMAL) for _ in range(5)]
        results = await asyncio.wait_for(asyncio.gather(*bad, *good), 30)
        assert all(r.status_code in (200, 400) for r in results)
        assert all(r.json()["data"]["workloads"]["totalCount"] == 1 for r in results[20:])


def _alias_bomb() -> str:
    """The catalog JobSet Karta with 10^9 values hidden behind 9 levels of YAML aliases (3 kB)."""
    text = yaml.safe_dump(jobset_definition("bomb"))
    levels = ["    l0: &l0 [" + ", ".join(["x"] * 10) + "]"]
    levels += [f"    l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return text.replace("  name: bomb\n", "  name: bomb\n  annotations:\n" + "\n".join(levels) + "\n", 1)


async def test_a_yaml_alias_bomb_is_refused_quickly(base: str) -> None:
    bomb = _alias_bomb()
    assert len(bomb) < 8000
    register = "mutation($doc: String!) { registerDefinition(definition: $doc) { ok problems { message } } }"
    async with httpx.AsyncClient(timeout=30) as client:
        response = await asyncio.wait_for(client.post(f"{base}/api/v1/definitions", content=bomb, headers=YAML_BODY), 10)
        assert response.status_code == 400 and "YAML aliases" in response.json()["message"], response.text
        body = (await asyncio.wait_for(client.post(f"{base}/graphql", json={
            "query": register, "variables": {"doc": bomb}}), 10)).json()
        result = body["data"]["registerDefinition"]
        assert not result["ok"] and "YAML aliases" in result["problems"][0]["message"]
        await _still_serving(client, base)
