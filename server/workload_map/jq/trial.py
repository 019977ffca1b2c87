"""The registration trial's evaluation of one jq expression: what a worker process measures.

The C jq binding cannot be interrupted and can even abort the whole process (a runaway
recursion such as ``def f: 1 + f; f`` ends in ``jq: error: cannot allocate memory`` and
``abort()``), and static checks cannot prove termination (``def f: f; f`` or
``until(false; .)`` pass them). A newly registered definition is therefore evaluated once
against sample objects, each expression as one job of the resolver worker pool
(``workload_map.materialization.trial``): the pool's time budget, memory limit, kill and
crash policy bound it. An expression is refused when its job runs out of the budget (the
worker is killed), when the worker dies (crash, abort, out of memory), or when one
evaluation on one sample takes more CPU time than :data:`PER_EVALUATION_LIMIT_S`: a definition
path is navigation and runs in microseconds, so anything near a tenth of a second would
cost every resolution of that kind as much.

This module holds the pure parts (no processes): the measurement a worker runs and the
reason texts. Runtime jq errors are not reported here (they depend on the object); the
resolver reports them per workload.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from workload_map.errors import JqError
from workload_map.jq.engine import Document, compile_program

#: Slowest acceptable single evaluation of one expression on one sample, seconds.
PER_EVALUATION_LIMIT_S = 0.1


def slowest_evaluation(expression: str, samples: Iterable[Any]) -> float:
    """CPU seconds of the slowest evaluation of ``expression`` on one of ``samples``.

    CPU time of this thread (``time.thread_time``: the Python path and the C jq library run
    in it), not wall time: a loaded machine must not refuse a definition whose evaluation is
    cheap (a plain path measured 137 ms of wall time while other processes held both cores).
    Runtime jq errors count as evaluations (they end quickly); only time matters here. Runs
    in a worker process: it may not return at all (the worker is then killed, on wall time).
    """
    program = compile_program(expression)
    slowest = 0.0
    for sample in samples:
        doc = Document(sample)
        started = time.thread_time()
        try:
            program.all(doc)
        except JqError:
            pass
        slowest = max(slowest, time.thread_time() - started)
    return slowest


def slow_reason(seconds: float, limit: float = PER_EVALUATION_LIMIT_S) -> str | None:
    """The refusal reason of an expression whose slowest evaluation took ``seconds``; None within ``limit``."""
    if seconds <= limit:
        return None
    return f"one evaluation took {seconds * 1000:.0f} ms on a sample object (limit {limit * 1000:.0f} ms)"


def timeout_reason(budget_s: float) -> str:
    """The refusal reason of an expression whose evaluation ran out of the ``budget_s`` seconds budget."""
    return f"did not finish within {budget_s:g} s on a sample object"


def crash_reason(detail: str) -> str:
    """The refusal reason of an expression whose evaluation ended the worker (``detail``: how)."""
    return f"crashed the jq evaluator ({detail})"
