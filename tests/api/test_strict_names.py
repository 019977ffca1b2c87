"""Names that Kubernetes refuses never reach the store: the name rule runs before any
file is written, and duplicate keys are refused with their path."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import yaml

from workload_map.config import Settings
from tests.api.test_mutations import jobset_definition

YAML = {"Content-Type": "application/yaml"}


def named(name: str) -> str:
    doc = jobset_definition()
    doc["metadata"]["name"] = name
    return yaml.safe_dump(doc)


async def test_long_and_newline_names_are_refused_before_the_state_directory(
        client: httpx.AsyncClient, settings: Settings) -> None:
    for name, reason in (("a" * 240 + ".b" * 10, "must be at most 253 characters, got 260"),
                         ("a" * 251, "must be at most 250 characters in the offline state directory"),
                         ("x\n", "contains a control character"), ("job\u202eset", "U+202E")):
        response = await client.post("/api/v1/definitions", content=named(name), headers=YAML)
        assert response.status_code == 422, response.text
        details = response.json()["details"]
        assert [d["path"] for d in details] == ["metadata.name"] and reason in details[0]["message"]
    state = Path(settings.state_dir)
    assert not state.exists() or [p.name for p in state.iterdir()] == []
    names = [d["name"] for d in (await client.get("/api/v1/definitions")).json()["items"]]
    assert not any(n.startswith(("aaaa", "x", "job\u202e")) for n in names)


async def test_a_240_character_name_is_stored_and_removed(client: httpx.AsyncClient, settings: Settings) -> None:
    name = "a" * 240  # a valid Kubernetes name; the file name is 245 bytes (limit 255)
    created = await client.post("/api/v1/definitions", content=named(name), headers=YAML)
    assert created.status_code == 201, created.text
    assert [p.name for p in Path(settings.state_dir).iterdir()] == [f"{name}.yaml"]
    assert (await client.delete(f"/api/v1/definitions/{name}")).status_code == 200
    assert list(Path(settings.state_dir).iterdir()) == []


async def test_duplicate_keys_in_a_definition_and_in_a_json_body(client: httpx.AsyncClient) -> None:
    text = named("my-jobset").replace("  name: my-jobset\n", "  name: my-jobset\n  name: other\n")
    response = await client.post("/api/v1/definitions", content=text, headers=YAML)
    assert response.status_code == 400
    assert response.json()["message"].startswith("metadata.name: duplicate key (lines ")
    body = '{"catalog": "jobset", "catalog": "ray"}'
    response = await client.post("/api/v1/workload-types", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and '"catalog" twice' in response.json()["message"]
    assert json.loads(body) == {"catalog": "ray"}  # what the plain decoder silently did
