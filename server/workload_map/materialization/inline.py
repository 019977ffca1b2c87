"""Offline resolution without a process where the time budget holds by itself.

A service that is not started (the one-shot CLI, tests) runs the materializer to completion
through a blocking resolver. :class:`InlineResolver` is that resolver: a job whose
definition has only bounded expressions (no loop, recursion or regular expression:
:func:`workload_map.jq.static.is_bounded`, so its time is bounded by the input's size) is
resolved in this process by the worker's own code (:func:`worker.run_job`); any other job
goes to the forked worker that enforces the budget (:class:`pool.BlockingResolver`, whose
module and its multiprocessing imports are loaded only then). Outcomes have the worker's
shape, so the materializer handles failures, error views and quarantine the same way.
"""

from __future__ import annotations

import atexit
from typing import TYPE_CHECKING

from workload_map.definitions.model import Definition
from workload_map.definitions.validate import jq_fields
from workload_map.jq.static import is_bounded
from workload_map.materialization.outcomes import Outcome
from workload_map.materialization.worker import Job, run_job

if TYPE_CHECKING:  # the pool imports multiprocessing: only when a worker process is needed
    from workload_map.materialization.pool import BlockingResolver


class InlineResolver:
    """A blocking resolver that forks a worker only for definitions with unbounded expressions.

    Args:
        timeout_s: the hard budget of one resolution in the worker, seconds.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._bounded: dict[int, tuple[Definition, bool]] = {}
        self._worker: BlockingResolver | None = None

    def is_bounded(self, definition: Definition) -> bool:
        """Every jq expression of ``definition`` is bounded (memoized per definition object)."""
        hit = self._bounded.get(id(definition))
        if hit is None or hit[0] is not definition:
            hit = self._bounded[id(definition)] = (definition, all(is_bounded(e) for _, e in jq_fields(definition)))
        return hit[1]

    def resolve(self, jobs: list[tuple[Job, Definition]]) -> list[Outcome]:
        """Outcomes of ``jobs``: the bounded ones resolved here first, then the others in the worker."""
        here: list[tuple[Job, Definition]] = []
        rest: list[tuple[Job, Definition]] = []
        for job, definition in jobs:
            (here if self.is_bounded(definition) else rest).append((job, definition))
        outcomes: list[Outcome] = []
        for job, definition in here:
            uid, view, error, seconds = run_job({job.definition: definition}, job)
            outcomes.append(Outcome(uid, "ok" if error is None else "failed", view, error, seconds))
        if rest:
            outcomes.extend(self._blocking().resolve(rest))
        return outcomes

    def worker(self) -> BlockingResolver:
        """The forked worker that enforces the budget, started on first use (shared with the sandbox)."""
        return self._blocking()

    def _blocking(self) -> BlockingResolver:
        if self._worker is None:
            from workload_map.materialization.pool import BlockingResolver

            self._worker = BlockingResolver(1, self.timeout_s)
            atexit.register(self._worker.close)
        return self._worker

    def close(self) -> None:
        """End the worker process, if one was started (idempotent)."""
        if self._worker is not None:
            self._worker.close()
