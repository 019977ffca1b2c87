"""The lifespan's stop is bounded: a background task that loses its cancellation is left behind,
and the service, caches and clients stop all the same (the server told to stop does)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from workload_map import app as app_module
from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import JOBSET


async def test_a_background_task_that_swallows_its_cancellation_does_not_hold_the_stop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(app_module, "FOLLOW_STOP_S", 0.5)
    app = create_app(Settings(state_dir=tmp_path), reader=SnapshotReader.from_paths(JOBSET))
    runtime = app.state.runtime
    released = asyncio.Event()

    running: list[asyncio.Task[None]] = []

    async def stubborn() -> None:  # what a loop around Python 3.11's asyncio.wait_for could do
        running.append(asyncio.current_task())  # type: ignore[arg-type]
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if released.is_set():
                    raise

    runtime.background.append(stubborn)
    closed: list[str] = []

    async def close() -> None:
        closed.append("client")

    runtime.closers.append(close)
    with caplog.at_level(logging.ERROR, logger="workload_map.app"):
        async with asyncio.timeout(20):  # the old stop waited for the task for good
            async with app.router.lifespan_context(app):
                assert runtime.started and runtime.service.is_ready()
                pool = runtime.service.materializer.pool
                assert len(pool.pids()) >= 1  # resolver workers running
    assert closed == ["client"]  # every step after the background tasks ran
    assert pool.pids() == []  # the resolver workers ended
    assert [r.getMessage() for r in caplog.records if "did not stop" in r.getMessage()] == [
        "background task wmap-background did not stop within 0.5 s of its cancellation; stopping without it"]
    # left behind and out of the loop's task set: asyncio.run's final cancel-and-wait skips it
    assert len(running) == 1 and not running[0].done() and running[0] not in asyncio.all_tasks()
    released.set()
    running[0].cancel()
    await asyncio.gather(*running, return_exceptions=True)
