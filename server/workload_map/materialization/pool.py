"""A bounded pool of resolver worker processes with a hard time budget per resolution.

Why processes: jq (a C library) cannot be interrupted from Python, holds the GIL and can
crash; in a child process a resolution can be ended by killing the process, and a crash
ends only that child. Why one dispatcher thread: it waits on every worker pipe at once with
``multiprocessing.connection.wait`` and a timeout equal to the nearest deadline, so timeouts
are enforced without a thread per worker and without touching the event loop. Results are
handed to ``deliver`` (the service posts them to the loop with ``call_soon_threadsafe``).

* Jobs go out in batches (``batch`` per message, the queue spread over the idle and the
  starting workers) to amortise the pipe round trip; a worker replies per job and the
  budget (``timeout_s``, per resolution) restarts at each reply. On a timeout the worker is
  killed and replaced, the job gets a ``timeout`` outcome and the rest of its batch is
  requeued at the front. A worker that dies mid-job (signal, jq crash): that job is retried
  once on a fresh worker, then gets a ``crashed`` outcome. Definitions are sent once per
  worker, keyed by content (:func:`definition_key`). A worker that fails to start (it exits
  or answers wrongly before ``worker.STARTED``, or no process can be made), and a worker
  that dies again before any job was answered since the last such failure, is replaced
  after a wait that doubles with each failure in a row (:data:`START_BACKOFF_S` up to
  :data:`START_BACKOFF_MAX_S`; a job answered resets it); meanwhile the jobs wait queued.
* Calls (:meth:`ResolverPool.call`: the registration trial's and the studio's jobs,
  ``worker.TrialJob`` and ``worker.StudioJob``) run on the same workers under the same
  budget, kill and crash policy; they go to the front of the queue (a caller awaits them)
  and their outcomes go to the callback given with them instead of ``deliver``.
* Start method ``forkserver``, this package's worker preloaded: safe with threads around,
  a replacement starts in milliseconds. The fork server's own start (0.2-0.7 s) is too
  much for a one-shot command: the offline CLI's :class:`BlockingResolver` forks its worker
  directly (``fork``: the parent's imports and compiled jq programs inherited).
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import time
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from msgspec import Struct

from workload_map.definitions.model import Definition
from workload_map.logs import logger
from workload_map.materialization import worker as worker_module
from workload_map.materialization.outcomes import Outcome, Status, definition_key
from workload_map.materialization.worker import AnyJob, Job, StudioJob, TrialJob

__all__ = ["BlockingResolver", "Outcome", "ResolverPool", "Status", "boot_fork_server", "definition_key", "usable_cores"]

log = logger(__name__)

START_TIMEOUT_S = 120.0
"""Seconds a fresh worker may take to report ``worker.STARTED`` before it is replaced."""

START_BACKOFF_S = 0.1
"""Wait before replacing a worker that failed to start (or died again with no job answered
since the last failure); doubled with every failure in a row."""

START_BACKOFF_MAX_S = 10.0
"""Longest wait before replacing a worker that failed (a job answered resets the doubling).

Without a wait, a worker that cannot start (its process exits at once: a broken
environment, a memory limit) was replaced in a tight loop, some 12,000 processes in a few
seconds, starving the server of CPU; with it, such a pool tries about once per
``START_BACKOFF_MAX_S`` and its jobs wait queued."""


def usable_cores() -> int:
    """CPU cores this process may run on (``sched_getaffinity``; ``cpu_count`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class _Item(Struct):
    job: AnyJob
    definition: Definition | None
    attempts: int = 0
    reply: Callable[[Outcome], None] | None = None


class _Worker:
    __slots__ = ("process", "conn", "slot", "known", "batch", "deadline", "started", "ready")

    def __init__(self, process: Any, conn: Connection, slot: Any = None) -> None:
        self.process, self.conn, self.slot = process, conn, slot
        self.known: set[str] = set()
        self.batch: collections.deque[_Item] = collections.deque()
        self.deadline = time.monotonic() + START_TIMEOUT_S  # until ready: the start-up bound
        self.started = 0.0
        self.ready = False  # worker.STARTED received: batches go only to ready workers


def _expression_of(w: _Worker) -> str:
    """The jq expression the worker recorded last (``""`` when none or unreadable)."""
    try:
        return bytes(w.slot.value).decode("utf-8", "replace") if w.slot is not None else ""
    except (AttributeError, ValueError):
        return ""


def _context(start_method: str) -> Any:
    """The multiprocessing context of ``start_method`` (``forkserver`` preloads the worker)."""
    if start_method not in multiprocessing.get_all_start_methods():
        start_method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(start_method)
    if start_method == "forkserver":
        ctx.set_forkserver_preload([worker_module.__name__, "jq"])  # jq: the C binding, imported on first use
    return ctx


def boot_fork_server() -> None:
    """Boot the fork server the server's workers come from, now (idempotent, thread-safe).

    ``wmap serve --snapshot`` calls it in a thread while the files load, so the boot (a
    fresh interpreter importing the worker module: 0.2-0.7 s) overlaps the load instead of
    delaying the first resolution. Nothing on a platform without ``forkserver``.

    Raises:
        OSError: the fork server process cannot be started.
    """
    if _context("forkserver").get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


class ResolverPool:
    """Worker processes behind one dispatcher thread.

    Args:
        workers: processes (>= 1).
        timeout_s: hard budget of one resolution, seconds.
        deliver: called from the dispatcher thread with each :class:`Outcome`.
        batch: most jobs per message to a worker.
        start_method: ``forkserver`` (the server) or ``fork`` (one-shot commands: no fork
            server to start); a method the platform lacks falls back to ``forkserver``,
            then ``spawn``.

    Raises:
        ValueError: ``workers`` < 1 or ``timeout_s`` <= 0.
    """

    def __init__(self, workers: int, timeout_s: float, deliver: Callable[[Outcome], None], *, batch: int = 16,
                 start_method: str = "forkserver") -> None:
        if workers < 1:
            raise ValueError(f"resolver workers must be at least 1, got {workers}")
        if timeout_s <= 0:
            raise ValueError(f"resolution timeout must be positive, got {timeout_s}")
        self.size, self.timeout_s, self.batch = workers, timeout_s, batch
        self._deliver = deliver
        self._ctx = _context(start_method)
        self._inbox: queue.SimpleQueue[list[_Item]] = queue.SimpleQueue()
        self._wake_recv, self._wake_send = multiprocessing.Pipe(duplex=False)
        self._pending: collections.deque[_Item] = collections.deque()
        self._workers: list[_Worker] = []
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._respawn_at: list[float] = []  # monotonic times at which a worker that failed to start is replaced
        self.failures_in_row = 0  # failed starts and crashes with no job answered in between
        self.replaced = 0
        self.timeouts = 0
        self.crashes = 0

    def start(self) -> None:
        """Start the dispatcher thread; it starts the workers (returns before they run).

        Every slot is due at once and filled by the dispatcher like any refill, so the
        caller's thread never waits for a process: the first ``forkserver`` start waits for
        the fork server to boot (0.2-0.7 s), which stalled the event loop, and ``/livez``
        with it, by 0.17-0.26 s at the cold start of ``wmap serve --snapshot`` when the
        workers were started here. Jobs submitted meanwhile wait queued.
        """
        self._respawn_at = sorted([*self._respawn_at, *[time.monotonic()] * self.size])
        self._thread = threading.Thread(target=self._run, name="wmap-resolver-dispatch", daemon=True)
        self._thread.start()

    def submit(self, jobs: list[tuple[Job, Definition]]) -> None:
        """Queue jobs (thread-safe); each yields exactly one outcome."""
        if jobs:
            self._inbox.put([_Item(job, definition) for job, definition in jobs])
            self._wake_send.send_bytes(b"x")

    def call(self, jobs: list[TrialJob | StudioJob], reply: Callable[[Outcome], None]) -> None:
        """Queue jobs at the front (thread-safe); each yields one outcome, to ``reply`` (dispatcher thread)."""
        if jobs:
            self._inbox.put([_Item(job, None, reply=reply) for job in jobs])
            self._wake_send.send_bytes(b"x")

    def close(self) -> None:
        """Stop the dispatcher and kill every worker (idempotent); queued jobs get no outcome."""
        if self._stopping:
            return
        self._stopping = True
        try:
            self._wake_send.send_bytes(b"x")
        except OSError:
            pass
        if self._thread is not None:
            self._thread.join(timeout=5)
        for w in self._workers:
            self._kill(w)
        self._workers = []
        self._respawn_at = []

    def pids(self) -> list[int]:
        """Process ids of the current workers."""
        return [w.process.pid for w in self._workers]

    def busy_pids(self) -> list[int]:
        """Process ids of workers with a batch in flight."""
        return [w.process.pid for w in self._workers if w.batch]

    # dispatcher thread

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe(duplex=True)
        slot = self._ctx.RawArray("c", worker_module.EXPRESSION_SLOT_BYTES)
        process = self._ctx.Process(target=worker_module.main, args=(child, slot), name="wmap-resolver",
                                    daemon=True)
        # SIGTERM stays pending in the child until it has dropped the parent's Python handlers
        # (worker.main), so a terminate() right after the start still ends it
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        child.close()
        return _Worker(process, parent, slot)

    def _closing(self) -> bool:
        """:meth:`close` was called (read again after a wait: another thread sets it)."""
        return self._stopping

    def _kill(self, w: _Worker) -> None:
        try:
            w.conn.close()
        except OSError:
            pass
        if w.process.is_alive():
            w.process.kill()
        w.process.join(timeout=2)

    def _run(self) -> None:
        while not self._stopping:
            try:
                self._step()
            except Exception:  # noqa: BLE001 - the dispatcher must outlive any one bad batch
                log.exception("resolver dispatcher step failed")
                time.sleep(0.05)

    def _step(self) -> None:
        while True:
            try:
                items = self._inbox.get_nowait()
            except queue.Empty:
                break
            if items[0].reply is None:
                self._pending.extend(items)
            else:  # a caller awaits these: before the resolutions queued
                self._pending.extendleft(reversed(items))
        now = time.monotonic()
        while self._respawn_at and self._respawn_at[0] <= now and not self._closing():
            self._respawn_at.pop(0)
            try:
                fresh = self._spawn()
            except OSError as exc:  # no process could be made (EAGAIN, ENOMEM): later again
                self._later(f"resolver worker could not be started ({exc})")
                continue
            if self._closing():  # close() ran while the process was being made
                self._kill(fresh)
                break
            self._workers.append(fresh)
        self._assign()
        busy = [w for w in self._workers if w.batch or not w.ready]
        deadlines = [w.deadline for w in busy] + self._respawn_at[:1]
        timeout = max(0.0, min(deadlines) - now) if deadlines else None
        ready = wait([self._wake_recv, *[w.conn for w in busy]], timeout)
        for conn in ready:
            if conn is self._wake_recv:
                while self._wake_recv.poll():
                    self._wake_recv.recv_bytes()
                continue
            w = next((w for w in busy if w.conn is conn), None)
            if w is not None:
                if w.ready:
                    self._receive(w)
                else:
                    self._started(w)
        now = time.monotonic()
        for w in [w for w in self._workers if w.deadline <= now and (w.batch or not w.ready)]:
            if w.ready:
                self._expire(w)
            else:
                self._start_failed(w, f"did not start within {START_TIMEOUT_S:g} s")

    def _started(self, w: _Worker) -> None:
        try:
            message = w.conn.recv()
        except (EOFError, OSError):
            self._start_failed(w, "exited while starting")
            return
        w.ready = message == worker_module.STARTED
        if not w.ready:
            self._start_failed(w, f"sent {message!r} instead of {worker_module.STARTED!r}")

    def _start_failed(self, w: _Worker, why: str) -> None:
        """End ``w`` and replace it :meth:`_later`."""
        self.crashes += 1
        self._replace(w, failed=f"resolver worker {w.process.pid} {why}")

    def _later(self, what: str) -> None:
        """Refill a worker slot later: ``what`` failed (logged with the wait).

        The wait is :data:`START_BACKOFF_S`, doubled per failure in a row, at most
        :data:`START_BACKOFF_MAX_S`; a job answered by any worker resets the count.
        """
        self.failures_in_row += 1
        delay = min(START_BACKOFF_MAX_S, START_BACKOFF_S * 2 ** min(self.failures_in_row - 1, 32))
        log.warning("%s; starting another in %.1f s", what, delay)
        self._respawn_at.append(time.monotonic() + delay)
        self._respawn_at.sort()

    def _assign(self) -> None:
        idle = [w for w in self._workers if w.ready and not w.batch]
        starting = sum(1 for w in self._workers if not w.ready)  # their share waits until they are ready
        for index, w in enumerate(idle):
            if not self._pending:
                break
            share = -(-len(self._pending) // (len(idle) - index + starting))
            items = [self._pending.popleft() for _ in range(max(1, min(self.batch, share)))]
            new = {}
            for item in items:
                if item.definition is not None and isinstance(item.job, Job) and item.job.definition not in w.known:
                    new[item.job.definition] = item.definition
                    w.known.add(item.job.definition)
            try:
                w.conn.send((new, [item.job for item in items]))
            except (OSError, ValueError, pickle.PicklingError) as exc:
                self._pending.extendleft(reversed(items))
                log.warning("sending a batch to resolver worker %s failed: %s", w.process.pid, exc)
                self._replace(w)
                continue
            w.batch.extend(items)
            w.started = time.monotonic()
            w.deadline = w.started + self.timeout_s

    def _receive(self, w: _Worker) -> None:
        try:
            while w.batch and w.conn.poll():
                uid, view, error, seconds = w.conn.recv()
                self.failures_in_row = 0
                item = w.batch.popleft()
                self._send(item, Outcome(uid, "ok" if error is None else "failed", view, error, seconds))
                w.started = time.monotonic()
                w.deadline = w.started + self.timeout_s
        except (EOFError, OSError):
            self._crashed(w)

    def _expire(self, w: _Worker) -> None:
        item = w.batch.popleft()
        self.timeouts += 1
        expression = _expression_of(w)  # read before the worker (and its slot) is replaced
        self._requeue_rest(w)
        self._replace(w)
        what = "resolution" if isinstance(item.job, Job) else "evaluation"
        message = f"{what} exceeded its {self.timeout_s:g} s budget"
        if expression:
            message += f" while evaluating jq expression {expression!r}"
        self._send(item, Outcome(item.job.uid, "timeout", None, message, time.monotonic() - w.started))

    def _crashed(self, w: _Worker) -> None:
        """``w`` died: replaced at once the first time, :meth:`_later` when no job was answered since a failure."""
        self.crashes += 1
        item = w.batch.popleft() if w.batch else None
        self._requeue_rest(w)
        if self.failures_in_row == 0:
            self.failures_in_row = 1
            self._replace(w)
        else:  # a worker that starts and dies on every batch (a memory limit, a jq crash): no fork loop
            self._replace(w, failed=f"resolver worker {w.process.pid} died with no job answered since the last "
                                    "failure")
        code = w.process.exitcode
        how = f"signal {-code}" if isinstance(code, int) and code < 0 else f"exit code {code}"
        if item is None:
            return
        if item.attempts == 0:
            item.attempts += 1
            self._pending.appendleft(item)
            log.warning("resolver worker %s died (%s) running job %s; retrying it on a fresh worker", w.process.pid, how,
                        item.job.uid)
            return
        what = "resolving this workload" if isinstance(item.job, Job) else "on this evaluation"
        self._send(item, Outcome(item.job.uid, "crashed", None, f"the resolver worker died ({how}) twice {what}",
                                 time.monotonic() - w.started))

    def _send(self, item: _Item, outcome: Outcome) -> None:
        (self._deliver if item.reply is None else item.reply)(outcome)

    def _requeue_rest(self, w: _Worker) -> None:
        self._pending.extendleft(reversed(w.batch))
        w.batch.clear()

    def _replace(self, w: _Worker, failed: str | None = None) -> None:
        """End ``w``; a new worker takes its slot now, or :meth:`_later` when ``failed`` says what failed."""
        self._kill(w)
        self.replaced += 1
        index = self._workers.index(w)
        if failed is not None:
            del self._workers[index]
            self._later(failed)
            return
        try:
            self._workers[index] = self._spawn()
        except OSError as exc:  # no process could be made (EAGAIN, ENOMEM): later again
            del self._workers[index]
            self._later(f"resolver worker could not be started ({exc})")


class BlockingResolver:
    """The pool used synchronously (offline CLI, services not started in an event loop).

    Same worker code, time budget and timeout error; ``resolve`` (resolutions) and ``call``
    (trial and studio jobs, ``workload_map.materialization.sandbox``) block until every job
    has an outcome. Workers are plain ``fork`` children (see the module docstring).
    """

    def __init__(self, workers: int = 1, timeout_s: float = 2.0, *, start_method: str = "fork") -> None:
        self._outcomes: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self._pool = ResolverPool(workers, timeout_s, self._outcomes.put, start_method=start_method)
        self._lock = threading.Lock()
        self._started = False

    def resolve(self, jobs: list[tuple[Job, Definition]]) -> list[Outcome]:
        """Outcomes of ``jobs`` (in completion order)."""
        with self._lock:
            if not self._started:
                self._pool.start()
                self._started = True
            self._pool.submit(jobs)
            return [self._outcomes.get() for _ in jobs]

    def call(self, jobs: list[TrialJob | StudioJob]) -> list[Outcome]:
        """Outcomes of trial or studio ``jobs`` (in completion order), on the same worker and budget."""
        with self._lock:
            if not self._started:
                self._pool.start()
                self._started = True
            self._pool.call(jobs, self._outcomes.put)
            return [self._outcomes.get() for _ in jobs]

    def close(self) -> None:
        """Kill the worker (idempotent)."""
        self._pool.close()
