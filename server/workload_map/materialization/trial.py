"""The registration trial as jobs of the resolver workers: one ``TrialJob`` per jq expression.

Why a trial at all, and what refuses an expression: ``workload_map.jq.trial``. Each distinct
expression of a definition is one job (evaluated on every sample and on ``{}``), run through
a :class:`~workload_map.materialization.sandbox.Sandbox`: the jobs go to the worker pool at
once (spread over its workers when the server's pool runs them), each under the pool's
budget, so a non-terminating expression is named by its own job running out of time, and
the other expressions of the definition are judged all the same.

Outcome -> reason: ``timeout`` -> did not finish within the budget; ``crashed`` (the worker
died twice: abort in the C jq library, killed) or ``failed`` (out of memory, an error
outside jq) -> crashed the jq evaluator; ``ok`` -> refused only when the slowest evaluation
is over ``per_evaluation``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workload_map.definitions.model import Definition
from workload_map.definitions.validate import jq_fields
from workload_map.errors import Problem, expression_problem
from workload_map.jq.trial import PER_EVALUATION_LIMIT_S, crash_reason, slow_reason, timeout_reason
from workload_map.materialization.pool import Outcome
from workload_map.materialization.sandbox import Sandbox, job_id
from workload_map.materialization.worker import TrialJob


def trial_jobs(expressions: Sequence[str], samples: Sequence[Any] = ()) -> list[TrialJob]:
    """One job per distinct expression (first-seen order), each on ``{}`` and ``samples``."""
    tried = ({}, *samples)
    return [TrialJob(job_id("trial"), expression, tried) for expression in dict.fromkeys(expressions)]


def reasons_of(jobs: Sequence[TrialJob], outcomes: Sequence[Outcome], budget_s: float, *,
               per_evaluation: float = PER_EVALUATION_LIMIT_S) -> dict[str, str]:
    """``{expression: reason}`` for every refused expression (module docstring)."""
    reasons: dict[str, str] = {}
    for job, outcome in zip(jobs, outcomes, strict=True):
        if outcome.status == "timeout":
            reasons[job.expression] = timeout_reason(budget_s)
        elif outcome.status != "ok":
            reasons[job.expression] = crash_reason(outcome.error or outcome.status)
        elif (slow := slow_reason(float(outcome.view), per_evaluation)) is not None:
            reasons[job.expression] = slow
    return reasons


async def trial_reasons(sandbox: Sandbox, expressions: Sequence[str], samples: Sequence[Any] = (), *,
                        per_evaluation: float = PER_EVALUATION_LIMIT_S) -> dict[str, str]:
    """``{expression: reason}`` for the refused ``expressions``, run through ``sandbox`` (awaits, never blocks).

    Raises:
        CacheNotReady: the server stopped while the trial ran.
    """
    jobs = trial_jobs(expressions, samples)
    outcomes = await sandbox.run(jobs)
    return reasons_of(jobs, outcomes, sandbox.timeout_s, per_evaluation=per_evaluation)


def trial_reasons_blocking(expressions: Sequence[str], samples: Sequence[Any] = (), *, timeout: float,
                           per_evaluation: float = PER_EVALUATION_LIMIT_S) -> dict[str, str]:
    """:func:`trial_reasons` on the process's blocking worker of budget ``timeout`` seconds (blocks)."""
    jobs = trial_jobs(expressions, samples)
    outcomes = Sandbox(timeout).run_blocking(jobs)
    return reasons_of(jobs, outcomes, timeout, per_evaluation=per_evaluation)


def problems_of(definition: Definition, reasons: dict[str, str]) -> list[Problem]:
    """One problem per jq field of ``definition`` whose expression was refused, by field path."""
    return [expression_problem(path, expr, reasons[expr]) for path, expr in jq_fields(definition) if expr in reasons]


async def check_termination(sandbox: Sandbox, definition: Definition, samples: Sequence[Any] = ()) -> list[Problem]:
    """The trial of every jq expression of ``definition`` through ``sandbox``: problems by field path."""
    expressions = [expr for _, expr in jq_fields(definition)]
    return problems_of(definition, await trial_reasons(sandbox, expressions, samples))


def check_termination_blocking(definition: Definition, samples: Sequence[Any] = (), *,
                               timeout: float) -> list[Problem]:
    """:func:`check_termination` on the blocking worker of budget ``timeout`` seconds (``wmap validate``)."""
    expressions = [expr for _, expr in jq_fields(definition)]
    return problems_of(definition, trial_reasons_blocking(expressions, samples, timeout=timeout))
