"""The one place a caller's jq runs: the resolver workers, with their budget, kill and crash policy.

The registration trial (``workload_map.materialization.trial``) and the definition studio
(``workload_map.api.studio``) evaluate expressions nobody has vetted yet. They do it as jobs
of the resolver worker pool (``worker.TrialJob``, ``worker.StudioJob``), never in the
serving process:

* **attached** (a started service: :meth:`Sandbox.attach` with the materializer's
  :class:`~workload_map.materialization.pool.ResolverPool`): :meth:`Sandbox.run` hands the
  jobs to the pool (front of its queue) and awaits an ``asyncio`` future per job, settled
  from the pool's dispatcher thread with ``call_soon_threadsafe``; the event loop only
  waits;
* **not attached** (the offline CLI, ``wmap validate``, a registrar before the server's
  service has started, a standalone registrar): a
  :class:`~workload_map.materialization.pool.BlockingResolver` (one forked worker, the same
  worker code and policy) runs them; :meth:`Sandbox.run` calls it in a thread.

One budget: every job gets the pool's budget (``timeout_s``, the resolver's
``--resolution-timeout``, 2 s by default); a job over it ends its worker, which is
replaced, exactly as for a resolution.
"""

from __future__ import annotations

import atexit
import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from workload_map.errors import CacheNotReady

if TYPE_CHECKING:  # asyncio and the pool (multiprocessing): imported where a job runs, not by an idle sandbox
    import asyncio

    from workload_map.materialization.outcomes import Outcome
    from workload_map.materialization.pool import BlockingResolver, ResolverPool
    from workload_map.materialization.worker import StudioJob, TrialJob

_OFFLINE: dict[float, BlockingResolver] = {}
_IDS = itertools.count(1)


def offline_worker(timeout_s: float) -> BlockingResolver:
    """The process's blocking resolver of budget ``timeout_s`` for sandboxes without their own."""
    worker = _OFFLINE.get(timeout_s)
    if worker is None:
        from workload_map.materialization.pool import BlockingResolver

        worker = _OFFLINE[timeout_s] = BlockingResolver(1, timeout_s)
        atexit.register(worker.close)
    return worker


def job_id(kind: str) -> str:
    """A process-unique id for a sandbox job (``kind-N``)."""
    return f"{kind}-{next(_IDS)}"


class Sandbox:
    """Runs trial and studio jobs on the resolver workers (module docstring).

    Args:
        timeout_s: the budget of one job, seconds (the pool's once attached).
        offline: the blocking resolver to use while not attached (called on first use);
            default :func:`offline_worker` of ``timeout_s``.
    """

    def __init__(self, timeout_s: float, *, offline: Callable[[], BlockingResolver] | None = None) -> None:
        self.timeout_s = timeout_s
        self._offline = offline or (lambda: offline_worker(timeout_s))
        self._pool: ResolverPool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: set[asyncio.Future[Outcome]] = set()

    @property
    def attached(self) -> bool:
        """True while jobs go to a started pool."""
        return self._pool is not None

    def attach(self, pool: ResolverPool, loop: asyncio.AbstractEventLoop) -> None:
        """Send jobs to ``pool`` from now on; outcomes are settled on ``loop``."""
        self._pool, self._loop = pool, loop
        self.timeout_s = pool.timeout_s

    def detach(self) -> None:
        """Stop using the pool (it is closing): jobs still awaited fail with ``CacheNotReady``."""
        self._pool = self._loop = None
        for future in list(self._waiting):
            if not future.done():
                future.set_exception(CacheNotReady("the server is stopping; retry shortly"))
        self._waiting.clear()

    async def run(self, jobs: Sequence[TrialJob | StudioJob]) -> list[Outcome]:
        """The outcomes of ``jobs``, in their order; the event loop is never blocked.

        Raises:
            CacheNotReady: the pool was detached (the server stopping) before every outcome came.
        """
        import asyncio

        if not jobs:
            return []
        pool, loop = self._pool, self._loop
        if pool is None or loop is not asyncio.get_running_loop():
            return await asyncio.to_thread(self.run_blocking, jobs)
        futures = {job.uid: loop.create_future() for job in jobs}
        self._waiting.update(futures.values())

        def settle(outcome: Outcome) -> None:  # on the loop
            future = futures.get(outcome.uid)
            if future is not None and not future.done():
                future.set_result(outcome)

        def reply(outcome: Outcome) -> None:  # the pool's dispatcher thread
            try:
                loop.call_soon_threadsafe(settle, outcome)
            except RuntimeError:  # loop closed during shutdown
                pass

        pool.call(list(jobs), reply)
        try:
            return list(await asyncio.gather(*futures.values()))
        finally:
            self._waiting.difference_update(futures.values())

    def run_blocking(self, jobs: Sequence[TrialJob | StudioJob]) -> list[Outcome]:
        """The outcomes of ``jobs``, in their order, from the blocking resolver (blocks the caller)."""
        outcomes = {o.uid: o for o in self._offline().call(list(jobs))} if jobs else {}
        return [outcomes[job.uid] for job in jobs]
