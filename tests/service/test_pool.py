"""ResolverPool: the time budget ends a looping resolution, a killed worker is retried once."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from workload_map.definitions import Phase
from workload_map.materialization import worker as worker_module
from workload_map.materialization.pool import START_BACKOFF_MAX_S, Outcome, ResolverPool, definition_key
from workload_map.materialization.worker import Inputs, Job, run_job
from tests.service.support import LOOP_PATH, SLOW_PATH, demo, demo_definition, slow_demo


class Collector:
    """Outcomes delivered by the dispatcher thread, with their arrival times."""

    def __init__(self) -> None:
        self.outcomes: dict[str, tuple[float, Outcome]] = {}
        self._event = threading.Condition()

    def __call__(self, outcome: Outcome) -> None:
        with self._event:
            self.outcomes[outcome.uid] = (time.monotonic(), outcome)
            self._event.notify_all()

    def wait(self, count: int, timeout: float) -> None:
        with self._event:
            assert self._event.wait_for(lambda: len(self.outcomes) >= count, timeout), self.outcomes


def _jobs(definition: Any, *objects: dict[str, Any]) -> list[tuple[Job, Any]]:
    key = definition_key(definition)
    return [(Job(o["metadata"]["uid"], key, Inputs(o)), definition) for o in objects]


def test_a_looping_resolution_is_ended_at_its_budget_and_the_worker_replaced() -> None:
    definition = demo_definition()
    got = Collector()
    pool = ResolverPool(2, 1.0, got)
    pool.start()
    try:
        _wait_for_workers(pool, 2)
        before = set(pool.pids())
        started = time.monotonic()
        pool.submit(_jobs(definition, demo("a", loop=True), demo("b"), demo("c", phase="wait")))
        got.wait(3, 10)
        at, looped = got.outcomes["uid-n-a"]
        # the worker recorded the C-jq expression it was running when it was ended
        assert looped.status == "timeout" and looped.error == (
            f"resolution exceeded its 1 s budget while evaluating jq expression {LOOP_PATH!r}")
        assert 1.0 <= at - started < 6.0  # ended at the 1 s budget, not before (loose upper bound for loaded CI)
        assert got.outcomes["uid-n-b"][1].view.phase is Phase.RUNNING  # .status.p absent -> "up" -> Running
        assert got.outcomes["uid-n-c"][1].view.phase is Phase.INITIALIZING  # "wait" -> Initializing
        assert pool.timeouts == 1 and pool.replaced == 1
        assert len(set(pool.pids()) - before) == 1  # exactly the looping worker was replaced
    finally:
        pool.close()
    assert pool.pids() == []


def test_a_worker_killed_mid_resolution_is_retried_once_on_a_fresh_worker() -> None:
    definition = demo_definition(SLOW_PATH)
    got = Collector()
    pool = ResolverPool(1, 20.0, got)
    pool.start()
    try:
        pool.submit(_jobs(definition, slow_demo("s")))
        deadline = time.monotonic() + 10
        while not pool.busy_pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # inside the ~1.5 s jq evaluation
        os.kill(pool.busy_pids()[0], signal.SIGKILL)
        got.wait(1, 15)
        outcome = got.outcomes["uid-n-s"][1]
        assert outcome.status == "ok" and outcome.view.phase is Phase.RUNNING  # recomputed on the new worker
        assert pool.crashes == 1 and pool.replaced == 1
    finally:
        pool.close()


def test_an_object_that_breaks_the_resolver_is_a_failed_outcome_not_a_dead_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    definition = demo_definition()
    real = worker_module.resolve

    def flaky(definition: Any, root: Any, **kw: Any) -> Any:
        if root["metadata"]["name"] == "bad":
            raise OverflowError("cannot convert float infinity to integer")
        return real(definition, root, **kw)

    monkeypatch.setattr(worker_module, "resolve", flaky)  # run_job is the worker's per-job step
    key = definition_key(definition)
    uid, view, error, _ = run_job({key: definition}, Job("u1", key, Inputs(demo("bad"))))
    assert (uid, view, error) == ("u1", None, "resolution failed: OverflowError: cannot convert float infinity "
                                              "to integer")
    assert run_job({key: definition}, Job("u2", key, Inputs(demo("good"))))[1].phase is Phase.RUNNING


def _wait_for_workers(pool: ResolverPool, count: int, timeout: float = 60.0) -> None:
    """Until ``count`` worker processes exist (the dispatcher thread starts them after ``start()``)."""
    deadline = time.monotonic() + timeout
    while len(pool.pids()) < count:
        assert time.monotonic() < deadline, f"{len(pool.pids())} of {count} workers started within {timeout:g} s"
        time.sleep(0.01)


def test_start_returns_before_a_worker_process_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """The event loop calls ``start()``: it must not wait for a process (the fork server's boot)."""
    release = threading.Event()
    spawned_by: list[str] = []
    real_spawn = ResolverPool._spawn

    def held_spawn(self: ResolverPool) -> Any:
        spawned_by.append(threading.current_thread().name)
        release.wait(5)  # held until the test has seen start() return (a bound, should it never)
        return real_spawn(self)

    monkeypatch.setattr(ResolverPool, "_spawn", held_spawn)
    got = Collector()
    pool = ResolverPool(2, 5.0, got, start_method="fork")
    pool.start()
    try:
        made_by_caller = "MainThread" in spawned_by  # start() returned: had it made a process itself?
        release.set()
        pool.submit(_jobs(demo_definition(), demo("a"), demo("b", phase="wait")))
        got.wait(2, 30)
        assert not made_by_caller and spawned_by == ["wmap-resolver-dispatch"] * 2
        assert got.outcomes["uid-n-a"][1].view.phase is Phase.RUNNING
        assert got.outcomes["uid-n-b"][1].view.phase is Phase.INITIALIZING
        assert len(pool.pids()) == 2
    finally:
        pool.close()


def test_bad_pool_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ResolverPool(0, 1.0, lambda o: None)
    with pytest.raises(ValueError, match="positive"):
        ResolverPool(1, 0, lambda o: None)


_REAL_MAIN = worker_module.main


_STARTS: dict[str, str] = {"path": ""}
"""The file where each patched worker appends the moment it started (set per test; forked children see it)."""


def _note_start() -> None:
    with open(_STARTS["path"], "a", encoding="utf-8") as out:
        out.write(f"{time.monotonic()}\n")  # CLOCK_MONOTONIC: one clock for every process of the machine


def _worker_starts(path: Path, count: int, timeout: float = 60.0) -> list[float]:
    """When the first ``count`` workers started (their own clock readings), waiting at most ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        starts = [float(line) for line in path.read_text(encoding="utf-8").split()] if path.exists() else []
        if len(starts) >= count:
            return starts[:count]
        assert time.monotonic() < deadline, f"only {len(starts)} workers started within {timeout:g} s"
        time.sleep(0.01)


def _exits_at_once(conn: Any, slot: Any = None) -> None:
    """A worker that cannot start: its process ends before it reports ``worker.STARTED``."""
    _note_start()
    os._exit(3)


def test_a_worker_that_cannot_start_is_replaced_with_a_growing_wait(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    """0.1, 0.2, 0.4 s at least between tries (START_BACKOFF_S doubled), not a process per millisecond
    (178 in 1.2 s without the wait); once a worker starts, the queued job is resolved and the count of
    failures in a row is reset. Only lower bounds on the gaps: a loaded machine makes them longer."""
    from workload_map.materialization import pool as pool_module

    definition = demo_definition()
    got = Collector()
    monkeypatch.setitem(_STARTS, "path", str(tmp_path / "starts"))
    monkeypatch.setattr(worker_module, "main", _exits_at_once)  # a forked child runs the parent's (patched) code
    pool = ResolverPool(1, 5.0, got, start_method="fork")
    pool.start()
    try:
        pool.submit(_jobs(definition, demo("a")))
        starts = _worker_starts(tmp_path / "starts", 4)
        gaps = [later - earlier for earlier, later in zip(starts, starts[1:])]
        assert [gap >= wait for gap, wait in zip(gaps, (0.1, 0.2, 0.4))] == [True] * 3, gaps
        assert pool.failures_in_row >= 3 and got.outcomes == {}  # the job waits queued
        monkeypatch.setattr(worker_module, "main", _REAL_MAIN)
        got.wait(1, 10 + pool_module.START_BACKOFF_MAX_S)  # the next try (at most START_BACKOFF_MAX_S away) starts
        assert got.outcomes["uid-n-a"][1].view.phase is Phase.RUNNING and pool.failures_in_row == 0
        assert len(pool.pids()) == 1
    finally:
        pool.close()


def _dies_on_its_first_batch(conn: Any, slot: Any = None) -> None:
    """A worker that starts, then dies on every batch (a memory limit met on the first job)."""
    _note_start()
    conn.send(worker_module.STARTED)
    conn.recv()
    os._exit(4)


def test_a_worker_that_dies_on_every_batch_is_not_replaced_in_a_loop(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """The first crash is replaced at once (the job is retried there); crashes with no job answered since
    wait 0.2, then 0.4 s at least before the next worker, not two processes per job (602 in 4 s for 300
    jobs without the wait). Only lower bounds on the gaps: a loaded machine makes them longer."""
    definition = demo_definition()
    got = Collector()
    monkeypatch.setitem(_STARTS, "path", str(tmp_path / "starts"))
    monkeypatch.setattr(worker_module, "main", _dies_on_its_first_batch)
    pool = ResolverPool(1, 5.0, got, start_method="fork", batch=1)
    pool.start()
    try:
        pool.submit(_jobs(definition, *(demo(f"j{i}") for i in range(20))))
        starts = _worker_starts(tmp_path / "starts", 4)
        # j0 dies, is retried at once and dies again (its outcome); j1 after 0.2 s, its retry after 0.4 s
        assert starts[2] - starts[1] >= 0.2 and starts[3] - starts[2] >= 0.4, starts
        got.wait(2, 10)
        # the next failure is at least 0.8 s away: j0 and j1 crashed twice, in order; the others wait queued
        assert {uid: o.status for uid, (_, o) in got.outcomes.items()} == {"uid-n-j0": "crashed",
                                                                          "uid-n-j1": "crashed"}
        monkeypatch.setattr(worker_module, "main", _REAL_MAIN)
        got.wait(20, 10 + START_BACKOFF_MAX_S)
        statuses = [o.status for _, o in got.outcomes.values()]
        assert statuses.count("ok") >= 18 and pool.failures_in_row == 0
    finally:
        pool.close()
