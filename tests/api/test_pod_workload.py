"""The scheduler view over REST and GraphQL, on the JobSet fixture (1 JobSet, 3 pods)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.api.conftest import gql
from tests.auth.support import auth_app, bearer

URL = "/api/v1/namespaces/ml/pods/{}/workload"
QUERY = """query($ns: String!, $name: String!) { podWorkload(namespace: $ns, name: $name) {
  namespace name phase node component instance replicaKey
  workload { name kind namespace }
  gangGroups { gang { name form minMember subGroups { name minMember } } subGroup { name minMember } } } }"""


async def test_rest_answers_the_pods_workload_and_gang(client: httpx.AsyncClient) -> None:
    response = await client.get(URL.format("train-worker-0-0"))
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["workload"]["uid"] == "js-train" and doc["workload"]["kind"] == "JobSet"
    assert (doc["component"], doc["instance"]) == ("replicatedjob", "worker")
    assert doc["pod"] == {"namespace": "ml", "name": "train-worker-0-0", "uid": "pod-worker-0",
                          "phase": "Pending", "node": "node-a"}
    # catalog podGroup "jobset", subgroup replicatedjob: leader 1 + worker 2 replicas = 3
    assert doc["gangGroups"] == [{"name": "jobset", "form": "podGroup", "minMember": 3,
                                  "subGroups": [{"name": "replicatedjob", "minMember": 3}],
                                  "subGroup": {"name": "replicatedjob", "minMember": 3}}]


async def test_rest_404_for_a_pod_of_no_workload(client: httpx.AsyncClient) -> None:
    missing = await client.get(URL.format("no-such-pod"))
    assert missing.status_code == 404
    assert "no-such-pod" in missing.json()["message"]
    other = await client.get("/api/v1/namespaces/elsewhere/pods/train-worker-0-0/workload")
    assert other.status_code == 404


async def test_graphql_pod_workload(client: httpx.AsyncClient) -> None:
    body = await gql(client, QUERY, ns="ml", name="train-worker-1-0")
    assert "errors" not in body, body
    pod = body["data"]["podWorkload"]
    # train-worker-1-0 is the fixture's unbound pod: node null
    assert (pod["name"], pod["phase"], pod["node"], pod["component"], pod["instance"], pod["replicaKey"]) == \
        ("train-worker-1-0", "Pending", None, "replicatedjob", "worker", None)
    assert pod["workload"] == {"name": "train", "kind": "JobSet", "namespace": "ml"}
    assert pod["gangGroups"] == [{"gang": {"name": "jobset", "form": "podGroup", "minMember": 3,
                                           "subGroups": [{"name": "replicatedjob", "minMember": 3}]},
                                  "subGroup": {"name": "replicatedjob", "minMember": 3}}]
    none = await gql(client, QUERY, ns="ml", name="no-such-pod")
    assert none["data"]["podWorkload"] is None


async def test_visibility_follows_the_workload_endpoints(tmp_path: Path) -> None:
    # bob lists JobSets in a and b and gets pods in b only; alice lists (and gets pods in) a.
    async with auth_app(tmp_path) as (_, client):
        def get(ns: str, token: str) -> Any:
            return client.get(f"/api/v1/namespaces/{ns}/pods/train-{ns}-w-0-0/workload", headers=bearer(token))
        in_a, in_b, in_c = (await get("a", "bob-token")), (await get("b", "bob-token")), (await get("c", "bob-token"))
        assert (in_a.status_code, in_b.status_code, in_c.status_code) == (200, 200, 404)
        assert in_a.json()["workload"]["name"] == "train-a" and "phase" not in in_a.json()["pod"]
        assert in_b.json()["pod"]["phase"] == "Pending"  # objects() pods have no status phase yet
        assert (await get("b", "alice-token")).status_code == 404
        body = (await client.post("/graphql", headers=bearer("alice-token"), json={
            "query": QUERY, "variables": {"ns": "b", "name": "train-b-w-0-0"}})).json()
        assert body["data"]["podWorkload"] is None
