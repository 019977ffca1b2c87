"""The list filters the web page uses, ``contains`` (name text) and ``node``, and the caller's
visibility under them (tests/auth/support.py: JobSets train-a, train-b, train-c in
namespaces a, b, c, two pods each bound to node-a; bob lists JobSets in a and b and may get
pods in b only; root sees everything)."""

from __future__ import annotations

from pathlib import Path

from tests.auth.support import auth_app, bearer


async def names(client, token: str, **params: str) -> list[str]:
    response = await client.get("/api/v1/workloads", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    return [row["name"] for row in response.json()["items"]]


async def test_contains_matches_part_of_the_name_case_insensitive(tmp_path: Path) -> None:
    async with auth_app(tmp_path) as (_, client):
        assert await names(client, "root-token", contains="RAIN-B") == ["train-b"]
        assert await names(client, "root-token", contains="train") == ["train-a", "train-b", "train-c"]
        assert await names(client, "bob-token", contains="train-c") == []  # bob may not list namespace c
        too_long = await client.get("/api/v1/workloads", params={"contains": "x" * 254}, headers=bearer("root-token"))
        assert too_long.status_code == 400
        assert too_long.json()["message"] == "contains must be at most 253 characters, got 254"


async def test_node_keeps_workloads_with_a_pod_there_where_the_caller_may_get_pods(tmp_path: Path) -> None:
    async with auth_app(tmp_path) as (_, client):
        assert await names(client, "root-token", node="node-a") == ["train-a", "train-b", "train-c"]
        assert await names(client, "root-token", node="node-z") == []
        # bob lists a and b but gets pods only in b: where train-a's pods run is not his to see
        assert await names(client, "bob-token", node="node-a") == ["train-b"]
