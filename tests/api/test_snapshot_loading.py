"""``--snapshot`` files are read off the event loop: the server answers while they load.

The load is gated here (the real ``load_snapshot`` runs once a test opens the gate), so
"while loading" is a state the test holds, not a race. The JobSet fixture
(``tests/api/fixtures/jobset.yaml``) is the one of ``test_rest.py``: JobSet ``ml/train``,
phase Initializing, 8 GPUs allocated (worked out there).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from workload_map import app as app_module
from workload_map.app import create_app
from workload_map.config import KubeSettings, Settings
from workload_map.kube.snapshot import SnapshotReader
from workload_map.kube.snapshotload import load_snapshot
from tests.api.conftest import JOBSET


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def _ready(client: httpx.AsyncClient) -> httpx.Response:
    for _ in range(3000):  # bounded poll: at most 3000 x 20 ms (worker processes start under load)
        response = await client.get("/readyz?verbose")
        if response.status_code == 200 or "startup failed" in response.text:
            return response
        await asyncio.sleep(0.02)
    return response


async def test_livez_answers_while_the_snapshot_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = asyncio.Event()

    async def gated(paths: list[str]) -> SnapshotReader:
        await gate.wait()
        return await load_snapshot(paths)

    monkeypatch.setattr(app_module, "load_snapshot", gated)
    app = create_app(Settings(state_dir=tmp_path / "state", kube=KubeSettings(snapshot=(str(JOBSET),))))
    async with _client(app) as client, app.router.lifespan_context(app):
        assert (await client.get("/livez")).status_code == 200
        loading = await client.get("/readyz?verbose")
        assert loading.status_code == 503 and "[-]startup in progress" in loading.text
        assert (await client.get("/api/v1/workloads")).status_code == 503
        gate.set()
        ready = await _ready(client)
        assert ready.status_code == 200, ready.text
        row = (await client.get("/api/v1/namespaces/ml/workloads")).json()["items"][0]
        assert (row["name"], row["phase"], row["gpu"]["allocated"]) == ("train", "Initializing", 8)


async def _failed_start(tmp_path: Path, snapshot: Path) -> tuple[httpx.Response, list[str]]:
    """``(/readyz?verbose once the start is over, the failures handed to on_startup_failure)``."""
    app = create_app(Settings(state_dir=tmp_path / "state", kube=KubeSettings(snapshot=(str(snapshot),))))
    failures: list[str] = []
    app.state.runtime.on_startup_failure = failures.append
    async with _client(app) as client, app.router.lifespan_context(app):
        return await _ready(client), failures


async def test_an_unreadable_snapshot_is_reported_after_the_start(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"apiVersion": "v1", "items": [{oops}]}')
    response, failures = await _failed_start(tmp_path, broken)
    assert response.status_code == 503
    assert "[-]startup failed: SnapshotError: " in response.text and "broken.json" in response.text
    assert len(failures) == 1 and failures[0].startswith("SnapshotError: ")


async def test_a_value_too_deep_to_decode_fails_the_start_with_its_place(tmp_path: Path) -> None:
    # before: the RecursionError ended the loading task unseen: "startup in progress" for good
    deep = tmp_path / "deep.json"
    deep.write_text('{"apiVersion": "v1", "kind": "List", "items": [' + "[" * 1200 + "]" * 1200 + "]}")
    response, failures = await _failed_start(tmp_path, deep)
    assert response.status_code == 503
    # the items array opens at char 46 (0-based), its first element right after it
    assert failures == [f"SnapshotError: {deep} (document 1): items[0]: the value at line 1 column 48 (char 47) "
                        "is not decoded: nested too deeply (the decoders stop near the interpreter's recursion "
                        "limit, 1,000 levels)"]
    assert f"[-]startup failed: {failures[0]}" in response.text


async def test_any_failure_of_the_load_is_reported_not_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    # a defect in the load (here injected: a KeyError) is logged with its traceback and fails the start
    async def broken(paths: list[str]) -> SnapshotReader:
        raise KeyError("injected")

    monkeypatch.setattr(app_module, "load_snapshot", broken)
    response, failures = await _failed_start(tmp_path, JOBSET)
    assert response.status_code == 503 and "[-]startup failed: KeyError: 'injected'" in response.text
    assert failures == ["KeyError: 'injected'"]
    logged = [r for r in caplog.records if r.getMessage().startswith("cannot serve the snapshot: KeyError")]
    assert len(logged) == 1 and logged[0].exc_info is not None


async def test_a_view_the_store_cannot_take_is_recorded_failed_and_the_start_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a defect when a view is stored (here injected once) used to end the outcome callback:
    # that workload never got a view and /readyz stayed at "views resolved" for good
    from workload_map.materialization.workset import WorkloadSet

    original = WorkloadSet.record
    raised: list[str] = []

    def record_once_broken(self: WorkloadSet, entry: Any, view: Any, seconds: float, key: str | None = None) -> None:
        if not raised and view.errors == []:
            raised.append(view.name)
            raise RuntimeError("injected")
        original(self, entry, view, seconds, key)

    monkeypatch.setattr(WorkloadSet, "record", record_once_broken)
    app = create_app(Settings(state_dir=tmp_path / "state", kube=KubeSettings(snapshot=(str(JOBSET),))))
    async with _client(app) as client, app.router.lifespan_context(app):
        ready = await _ready(client)
        assert ready.status_code == 200, ready.text
        row = (await client.get("/api/v1/namespaces/ml/workloads")).json()["items"][0]
    assert raised == ["train"]
    assert row["name"] == "train" and row["phase"] == "Undefined"
