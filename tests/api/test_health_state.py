"""Readiness, the offline state directory, and Karta objects loaded from a snapshot."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import httpx
import pytest
import yaml

from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import InvalidDefinition
from workload_map.gvk import GVK
from workload_map.kube.freshness import freshness
from workload_map.kube.reader import Freshness, InformerStatus
from workload_map.kube.snapshot import SnapshotReader
from workload_map.definitions.stored import StoreError
from workload_map.registration.registrar import Registrar
from workload_map.registration.stores import DirectoryStore
from tests.api.conftest import JOBSET
from tests.api.conftest import gql
from tests.api.test_mutations import broken, jobset_definition

YAML_BODY = {"Content-Type": "application/yaml"}

TRAIN = "/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/train"


class SlowReader(SnapshotReader):
    """A snapshot that reports "not synced" until told otherwise, with one missing CRD."""

    synced = False

    def is_synced(self) -> bool:
        return self.synced

    def states(self) -> dict:
        states = dict(super().states())
        gvk = next(iter(states))
        states[gvk] = InformerStatus(gvk, "synced" if self.synced else "syncing")
        missing = GVK("ray.io", "v1", "RayCluster")
        states[missing] = InformerStatus(missing, "crd_missing")
        return states

    def freshness(self) -> Freshness:
        return freshness(self.states())  # a snapshot's own answer is always FRESH


def _client(app) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_readyz_is_503_until_synced_then_200(settings: Settings) -> None:
    reader = SlowReader.from_paths(JOBSET)
    app = create_app(settings, reader=reader)
    async with _client(app) as client:
        assert (await client.get("/livez")).status_code == 200
        assert (await client.get("/readyz")).status_code == 503  # lifespan not run yet
        async with app.router.lifespan_context(app):
            response = await client.get("/readyz?verbose")
            assert response.status_code == 503
            assert "[-]informer" in response.text and "crd_missing" in response.text
            assert response.text.rstrip().endswith("readyz check failed")
            blocked = await client.get(TRAIN)
            assert blocked.status_code == 503 and blocked.json()["error"] == "not_ready"
            assert blocked.headers["Retry-After"]
            reader.synced = True  # then the one workload is resolved in the background
            await app.state.runtime.service.settled(10)
            response = await client.get("/readyz?verbose")
            assert response.status_code == 200 and "readyz check passed" in response.text
            assert "[+]views resolved 1 of 1" in response.text  # the JobSet fixture: 1 workload
            assert "[+]informer ray.io/v1/RayCluster crd_missing" in response.text
            assert (await client.get("/healthz")).status_code == 200
            assert (await client.get(TRAIN)).status_code == 200
        assert (await client.get("/readyz")).status_code == 503  # shut down


async def test_registered_definitions_survive_a_restart(settings: Settings) -> None:
    for round_ in range(2):
        app = create_app(settings, reader=SnapshotReader.from_paths(JOBSET))
        async with app.router.lifespan_context(app), _client(app) as client:
            if round_ == 0:
                assert (await client.post("/api/v1/definitions", content=yaml.safe_dump(jobset_definition()), headers=YAML_BODY)
                        ).status_code == 201
            assert (await client.get(TRAIN)).json()["definition"] == "my-jobset"
    assert sorted(p.name for p in settings.state_dir.iterdir()) == ["my-jobset.yaml"]  # no temporary files


async def test_invalid_stored_file_is_skipped_and_reported(settings: Settings) -> None:
    settings.state_dir.mkdir(parents=True)
    (settings.state_dir / "bad.yaml").write_text(yaml.safe_dump(broken(jobset_definition("bad"))))
    (settings.state_dir / "junk.yaml").write_text("a: [")
    app = create_app(settings, reader=SnapshotReader.from_paths(JOBSET))
    async with app.router.lifespan_context(app), _client(app) as client:
        listed = (await client.get("/api/v1/definitions")).json()
        assert {s["name"] for s in listed["skipped"]} == {"bad", "junk"}
        assert (await client.get(TRAIN)).json()["origin"] == "catalog"
        body = await gql(client, "{ skippedDefinitions { name problems { path } } }")
        assert len(body["data"]["skippedDefinitions"]) == 2
        assert "2 invalid stored definition" in (await client.get("/readyz?verbose")).text


async def test_write_error_keeps_the_previous_definition(settings: Settings, monkeypatch) -> None:
    app = create_app(settings, reader=SnapshotReader.from_paths(JOBSET))
    async with app.router.lifespan_context(app), _client(app) as client:
        await client.post("/api/v1/definitions", content=yaml.safe_dump(jobset_definition()), headers=YAML_BODY)
        changed = jobset_definition()
        changed["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"].pop("running")

        def failing_write(self, key: str, text: str) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(DirectoryStore, "_write", failing_write)
        response = await client.post("/api/v1/definitions", content=yaml.safe_dump(changed), headers=YAML_BODY)
        assert response.status_code == 503 and response.json()["error"] == "store_unavailable"
        registry = app.state.runtime.registry
        entry = next(e for e in registry.registered() if e.key == "my-jobset")
        mappings = entry.definition.manifest["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]
        assert "running" in mappings["statusMappings"]


async def test_directory_store_write_is_atomic(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "s")
    await store.save("a", {"x": 1})
    await store.save("a", {"x": 2})
    assert yaml.safe_load((tmp_path / "s" / "a.yaml").read_text()) == {"x": 2}
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["a.yaml"]
    assert await store.delete("a") and not await store.delete("a")
    blocked = DirectoryStore(tmp_path / "file")
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StoreError):
        await blocked.save("a", {})


async def test_kartas_in_a_snapshot_are_cluster_definitions(settings: Settings) -> None:
    karta = copy.deepcopy(jobset_definition("from-cluster"))
    invalid = broken(jobset_definition("broken-karta"))
    reader = SnapshotReader.from_paths(JOBSET)
    reader.add(karta)
    reader.add(invalid)
    app = create_app(settings, reader=reader)
    async with app.router.lifespan_context(app), _client(app) as client:
        for _ in range(100):  # the follower applies the initial list after each Karta's trial (~0.1 s)
            view = (await client.get(TRAIN)).json()
            if view["origin"] == "cluster":
                break
            await asyncio.sleep(0.05)
        assert (view["definition"], view["origin"]) == ("from-cluster", "cluster")
        skipped = (await client.get("/api/v1/definitions")).json()["skipped"]
        assert [s["name"] for s in skipped] == ["broken-karta"]
        reader.remove(next(g for g in reader.gvks() if g.kind == "Karta"), None, "from-cluster")
        await asyncio.sleep(0.05)
        assert (await client.get(TRAIN)).json()["origin"] == "catalog"


async def test_trial_rejects_a_non_terminating_expression(settings: Settings) -> None:
    registrar = Registrar(DefinitionRegistry(load_catalog(settings.catalog_dir)), DirectoryStore(settings.state_dir),
                          trial_timeout=1.0)
    doc = jobset_definition()
    doc["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = "def f: f; f"
    with pytest.raises(InvalidDefinition) as caught:
        await registrar.check(doc)
    assert any("did not finish" in p.message or "instanceIdPath" in p.path for p in caught.value.problems)
