"""GraphQL queries run off the event loop (workload_map.api.offload), and read consistent views.

Both tests serve the app under a real uvicorn on 127.0.0.1 in the test's loop (the
server's loop), so a query executed on that loop would block the test itself.
"""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import JOBSET
from tests.api.live import serving, wait_until

PAGE = "{ workloads(first: 500) { totalCount nodes { namespace kind name } pageInfo { hasNextPage } } }"
DEPLOYMENT = GVK("apps", "v1", "Deployment")


async def _post(client: httpx.AsyncClient, query: str) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body


async def test_a_query_runs_in_the_query_thread_while_livez_answers(settings: Settings,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(settings, reader=SnapshotReader.from_paths(JOBSET))
    service = app.state.runtime.service
    entered, release = threading.Event(), threading.Event()
    threads: list[str] = []
    real: Callable[..., Any] = service.workloads

    def held(**kwargs: Any) -> Any:
        """The real listing, held until the test releases it (at most 10 s)."""
        threads.append(threading.current_thread().name)
        entered.set()
        release.wait(10)
        return real(**kwargs)

    monkeypatch.setattr(service, "workloads", held)
    async with serving(app) as address, httpx.AsyncClient(base_url=f"http://{address}", timeout=10) as client:
        query = asyncio.create_task(_post(client, PAGE))
        assert await asyncio.to_thread(entered.wait, 10), "the query never reached the listing"
        # the listing is blocked in another thread: the server's loop still answers
        livez = await client.get("/livez")
        readyz = await client.get("/readyz")
        assert (livez.status_code, livez.text, readyz.status_code) == (200, "ok", 200)
        assert not query.done()
        release.set()
        body = await query
    assert threads == ["wmap-graphql"]
    assert threading.current_thread().name != "wmap-graphql"
    # the JobSet fixture holds one top-level workload, JobSet ml/train
    assert body["data"]["workloads"] == {"totalCount": 1, "nodes": [{"namespace": "ml", "kind": "JobSet",
                                                                      "name": "train"}],
                                         "pageInfo": {"hasNextPage": False}}


def _deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "churn", "resourceVersion": "1"},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}}


async def test_pages_stay_consistent_while_views_change(settings: Settings) -> None:
    reader = SnapshotReader.from_paths(JOBSET)
    for i in range(120):
        reader.add(_deployment(f"base-{i:03d}"))
    app = create_app(settings, reader=reader)
    service = app.state.runtime.service
    rng = random.Random(12)
    present: set[str] = set()
    answers: list[dict[str, Any]] = []

    async def churn() -> None:
        """200 cache events: add or delete one of 40 Deployments (on the server's loop)."""
        for _ in range(200):
            name = f"churn-{rng.randrange(40):02d}"
            if name in present:
                reader.remove(DEPLOYMENT, "churn", name)
                present.discard(name)
            else:
                reader.add(_deployment(name))
                present.add(name)
            await asyncio.sleep(0.002)

    async def pages(client: httpx.AsyncClient) -> None:
        for _ in range(12):
            answers.append((await _post(client, PAGE))["data"]["workloads"])

    async with serving(app) as address, httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as client:
        await asyncio.gather(churn(), *(pages(client) for _ in range(6)))
        assert await service.settled(30)
        final = (await _post(client, PAGE))["data"]["workloads"]
    assert len(answers) == 6 * 12
    for page in answers:
        keys = [(n["namespace"], n["kind"], n["name"]) for n in page["nodes"]]
        # one consistent generation: every counted workload listed once, in list order
        assert page["totalCount"] == len(keys) and not page["pageInfo"]["hasNextPage"]
        assert keys == sorted(set(keys))
        # the JobSet and the 120 base Deployments never change; 0..40 churn ones come and go
        assert 121 <= page["totalCount"] <= 161
        assert sum(1 for k in keys if k[2].startswith("base-")) == 120
    # after the churn: JobSet + 120 base + the churn Deployments left present
    assert final["totalCount"] == 121 + len(present)
    assert {n["name"] for n in final["nodes"] if n["name"].startswith("churn-")} == present


async def test_a_query_past_its_budget_is_504_and_the_query_thread_goes_on(tmp_path: Path) -> None:
    from workload_map.auth.access import KubernetesAccess
    from workload_map.config import AuthSettings, HttpSettings
    from tests.auth.support import RULES, USERS, FakeReviewer, PluralReader, bearer, objects

    settings = Settings(state_dir=tmp_path / "s", auth=AuthSettings(mode="kubernetes"),
                        http=HttpSettings(request_timeout_s=0.5))
    reviewer = FakeReviewer(USERS, RULES)
    app = create_app(settings, reader=PluralReader(objects()), access=KubernetesAccess(reviewer))
    async with serving(app) as address, httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as client:
        # bob's token is reviewed (and cached) by a query that needs no access review
        warm = await client.post("/graphql", json={"query": "{ definitions { name } }"}, headers=bearer("bob-token"))
        assert warm.status_code == 200 and "errors" not in warm.json()
        reviewer.delay = 2.0  # bob's list review, made on the server's loop from the query thread, takes 2 s
        slow = await client.post("/graphql", json={"query": "{ workloads { totalCount } }"},
                                 headers=bearer("bob-token"))
        assert slow.status_code == 504 and slow.json()["error"] == "deadline_exceeded", slow.text
        assert (await client.get("/livez")).status_code == 200
        reviewer.delay = 0.0
        # bob's reviews go on (shielded, shared per key) and hold the policy's review slots
        await wait_until(lambda: reviewer.in_flight == 0, 60)
        root = await client.post("/graphql", json={"query": "{ workloads { totalCount } }"},
                                 headers=bearer("root-token"))
    # root may list JobSets everywhere: train-a, train-b and train-c
    assert root.status_code == 200 and root.json()["data"]["workloads"]["totalCount"] == 3, root.text


async def test_a_large_json_body_is_decoded_off_the_event_loop(client: httpx.AsyncClient,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from workload_map.api.graphql import OFF_LOOP_JSON_BYTES, GraphQLApp

    threads: list[str] = []
    original = GraphQLApp.parse_json

    def recording(self: GraphQLApp, data: str | bytes) -> object:
        threads.append(threading.current_thread().name)
        return original(self, data)

    monkeypatch.setattr(GraphQLApp, "parse_json", recording)
    padding = "x" * (OFF_LOOP_JSON_BYTES + 1)  # a variable of no variable definition makes the body large
    body = {"query": "{ workloads { totalCount } }", "variables": {"pad": padding}}
    answer = (await client.post("/graphql", json=body)).json()
    assert answer == {"data": {"workloads": {"totalCount": 1}}}  # the fixture's one JobSet
    # decoded once in a worker thread; strawberry's own call got that value back
    assert threads[0] != threading.main_thread().name and len(threads) == 2
    small = (await client.post("/graphql", json={"query": "{ workloads { totalCount } }"})).json()
    assert small == {"data": {"workloads": {"totalCount": 1}}}
    assert threads[2] == threading.current_thread().name  # a small body stays where it was read
