"""Issue 12's attacks, replayed against a real ``wmap serve`` over the bundled sample.

Each attack must be refused with the right status and message while ``/livez`` answers
during and after it, every definition stays registered and another workload's answer is
unchanged (checked after every test by ``intact``). Loops are bounded in count and time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.abuse.attacks import livez_ok
from tests.abuse.server import Served, serve

REFERENCE = "/api/v1/namespaces/ml-training/workloads/jobset.x-k8s.io/JobSet/llm-pretrain"
PORTAL = (Path(__file__).parent / "portal_query.graphql").read_text(encoding="utf-8")
EXTRA = """
apiVersion: v1
kind: Pod
metadata: {name: exa-cpu, namespace: hostile, uid: 0b7c1d4e-0000-4000-8000-000000000001, resourceVersion: "1"}
spec:
  nodeName: gpu-node-01
  containers:
  - name: main
    image: busybox
    resources: {requests: {cpu: 1E, nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: negative-gpu, namespace: hostile, uid: 0b7c1d4e-0000-4000-8000-000000000002, resourceVersion: "1"}
spec:
  nodeName: gpu-node-01
  containers:
  - name: main
    image: busybox
    resources: {requests: {nvidia.com/gpu: "-1"}, limits: {nvidia.com/gpu: "-1"}}
status: {phase: Running, conditions: [{type: Ready, status: "True"}]}
"""
YAML = {"Content-Type": "application/yaml"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The server with default limits, plus two hostile pods in namespace ``hostile``."""
    tmp = tmp_path_factory.mktemp("attacks")
    (tmp / "extra.yaml").write_text(EXTRA, encoding="utf-8")
    with serve(tmp, "--snapshot", str(tmp / "extra.yaml")) as served:
        yield served


@pytest.fixture(scope="module")
def baseline(server: Served) -> dict[str, Any]:
    """Definitions and the reference workload before any attack."""
    return {"definitions": sorted(d["name"] for d in httpx.get(f"{server.base}/api/v1/definitions").json()["items"]),
            "reference": httpx.get(server.base + REFERENCE).json()}


@pytest.fixture(autouse=True)
def intact(server: Served, baseline: dict[str, Any]) -> Iterator[None]:
    """After each attack: alive, every definition registered, the reference unchanged."""
    yield
    assert livez_ok(server.base)
    names = sorted(d["name"] for d in httpx.get(f"{server.base}/api/v1/definitions").json()["items"])
    assert names == baseline["definitions"]
    assert httpx.get(server.base + REFERENCE).json() == baseline["reference"]


def bomb(levels: int) -> str:
    fragments = ["fragment F0 on Query { definitions { name } }"]
    fragments += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, levels + 1)]
    return f"query {{ ...F{levels} }} " + " ".join(fragments)


async def _during(base: str, attack: Any) -> tuple[Any, bool]:
    """Run ``attack`` (a coroutine) and a /livez probe at the same time."""
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        task = asyncio.create_task(attack(client))
        await asyncio.sleep(0.05)
        live = (await client.get("/livez")).status_code == 200
        return await task, live


async def test_fragment_bombs_are_refused_with_livez_answering(server: Served) -> None:
    async def attack(client: httpx.AsyncClient) -> list[dict[str, Any]]:
        answers = []
        for levels in (20, 40):  # 20 took 10 s, 40 minutes, before the cost check
            response = await client.post("/graphql", json={"query": bomb(levels)})
            assert response.status_code == 200
            answers.append(response.json())
        return answers

    answers, live = await _during(server.base, attack)
    assert live
    # 20 levels: 41 spreads (under 64), but 2^5 = 32 copies of 'definitions' meet in F5
    assert answers[0]["errors"][0]["extensions"]["code"] == "FIELD_REPEATED"
    # 40 levels: 1 + 2 * 40 = 81 spreads
    assert answers[1]["errors"][0]["message"] == "the document holds 81 fragment spreads; the limit is 64"


async def test_fifty_aliased_pages_are_refused_by_cost(server: Served) -> None:
    fields = "nodes { name phase roles { name replicas { desired ready } pods { name phase node } } }"
    query = "{ " + " ".join(f"a{i}: workloads(first: 500) {{ {fields} }}" for i in range(50)) + " }"
    async with httpx.AsyncClient(base_url=server.base, timeout=30) as client:
        body = (await client.post("/graphql", json={"query": query})).json()
    error = body["errors"][0]
    # per alias: 1 + 500 * (nodes 1 + [name, phase 2 + roles 1 + (name 1 + replicas 3 + pods 4)]) = 1 + 500 * 12
    # = 6,001; 50 aliases: 300,050
    assert error["extensions"] == {"code": "QUERY_TOO_EXPENSIVE", "cost": 300_050, "limit": 100_000}
    assert error["message"].startswith("the query would resolve 300,050 fields")


async def test_two_hundred_concurrent_queries_leave_livez_answering(server: Served) -> None:
    query = "{ workloads(first: 100) { totalCount nodes { name phase gpu { allocated } } } }"
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=server.base, timeout=60, limits=limits) as client:
        pages = [asyncio.create_task(client.post("/graphql", json={"query": query})) for _ in range(200)]
        await asyncio.sleep(0.1)
        async with httpx.AsyncClient(base_url=server.base, timeout=30) as probe:
            live = (await probe.get("/livez")).status_code
        answers = await asyncio.gather(*pages)
    assert live == 200
    assert {r.status_code for r in answers} <= {200, 503}
    done = [r.json() for r in answers if r.status_code == 200]
    # the sample holds 141 top-level workloads (server/workload_map/sample/), plus the 2 hostile pods
    assert done and all(b["data"]["workloads"]["totalCount"] == 143 for b in done)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_cross_site_registration_is_refused(server: Served, content_type: str | None) -> None:
    text = (Path(__file__).parent.parent.parent / "catalog" / "ray-io-raycluster-v1.yaml").read_text()
    headers = {"Content-Type": content_type} if content_type else {}
    response = httpx.post(f"{server.base}/api/v1/definitions", content=text, headers=headers)
    assert response.status_code == 415 and response.json()["error"] == "unsupported_media_type"
    response = httpx.post(f"{server.base}/api/v1/workload-types", content='{"catalog": "ray"}',
                          headers={"Content-Type": "application/json", "Origin": "https://evil.example"})
    assert response.status_code == 403 and response.json()["error"] == "cross_origin_refused"


def test_exa_and_negative_quantities(server: Served) -> None:
    exa = httpx.get(f"{server.base}/api/v1/namespaces/hostile/workloads/core/Pod/exa-cpu").json()
    # cpu 1E = 10^18 cores no longer breaks the view: GPUs still 2, phase Running
    assert (exa["phase"], exa["gpu"]["allocated"], exa["errors"]) == ("Running", 2, [])
    assert exa["resources"]["byResource"]["cpu"] == str(10**18)
    negative = httpx.get(f"{server.base}/api/v1/namespaces/hostile/workloads/core/Pod/negative-gpu").json()
    assert negative["gpu"]["requestedBySpec"] == 0
    text = json.dumps(negative)
    assert "containers[0].resources.requests.nvidia.com/gpu: quantity '-1' must not be negative" in text


def _definition(name: str) -> str:
    doc = yaml.safe_load((Path(__file__).parent.parent.parent / "catalog" / "ray-io-raycluster-v1.yaml").read_text())
    doc["metadata"]["name"] = name
    return yaml.safe_dump(doc)


def test_trailing_newlines_and_long_names_are_refused(server: Served) -> None:
    for name, reason in (("x\n", "contains a control character"), ("a" * 254, "must be at most 253 characters"),
                         ("a" * 251, "must be at most 250 characters in the offline state directory"),
                         ("ray\u202ecluster", "U+202E")):
        response = httpx.post(f"{server.base}/api/v1/definitions", content=_definition(name), headers=YAML,
                              timeout=30)
        assert response.status_code == 422, response.text
        assert response.json()["details"][0]["path"] == "metadata.name"
        assert reason in response.json()["details"][0]["message"]
    assert not server.state_dir.exists() or list(server.state_dir.iterdir()) == []
    # 240 characters is a valid Kubernetes name and fits a file name: checked, not a 503
    dry = httpx.post(f"{server.base}/api/v1/definitions?dryRun=true", content=_definition("a" * 240), headers=YAML,
                     timeout=30)
    assert dry.status_code == 200, dry.text


def test_duplicate_keys_are_refused_with_their_path(server: Served) -> None:
    text = _definition("dup-ray").replace("metadata:\n", "metadata:\n  name: first\n", 1)
    response = httpx.post(f"{server.base}/api/v1/definitions", content=text, headers=YAML, timeout=30)
    assert response.status_code == 400
    assert response.json()["message"].startswith("metadata.name: duplicate key (lines ")


def test_made_up_methods_do_not_grow_the_metrics(server: Served) -> None:
    before = httpx.get(f"{server.base}/metrics").text.count("\n")
    for index in range(10):
        httpx.request(f"X{index}", f"{server.base}/livez")
    after = httpx.get(f"{server.base}/metrics").text
    assert 'method="X' not in after
    # at most the one new "other" histogram (16 buckets + sum + count + created) and /metrics' own
    assert after.count("\n") - before <= 2 * 19
