"""Trial evaluation of jq expressions in a separate process with time limits.

The C jq binding cannot be interrupted and can even abort the whole process (a runaway
recursion such as ``def f: 1 + f; f`` ends in ``jq: error: cannot allocate memory`` and
``abort()``), and static checks cannot prove termination (``def f: f; f`` or
``until(false; .)`` pass them). A newly registered definition is therefore evaluated
once, in a child Python process, against sample objects. An expression is refused when:

* the child does not answer within the overall limit (it is killed);
* the child dies (crash, abort, out of memory);
* one evaluation on one sample takes longer than the per-evaluation limit: a definition
  path is navigation and runs in microseconds, so anything near a tenth of a second would
  stall the server's event loop on every object of that kind.

Protocol: ``{"expressions": [...], "samples": [...]}`` on stdin; the child answers
``{"seconds": {expression: slowest evaluation}}`` on stdout. Runtime jq errors are not
reported here (they depend on the object); the resolver reports them per workload.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any, Sequence

#: Default wall-clock budget for a whole trial, seconds.
TRIAL_TIMEOUT_S = 5.0
#: Slowest acceptable single evaluation of one expression on one sample, seconds.
PER_EVALUATION_LIMIT_S = 0.1


def trial_reasons(expressions: Sequence[str], samples: Sequence[Any], *, timeout: float = TRIAL_TIMEOUT_S,
                  per_evaluation: float = PER_EVALUATION_LIMIT_S) -> dict[str, str]:
    """Evaluate every expression on every sample (and ``{}``) in a child process.

    Args:
        expressions: jq sources (already compiled and statically checked).
        samples: JSON values to evaluate against (``{}`` is always added).
        timeout: wall-clock seconds for the whole trial.
        per_evaluation: slowest acceptable single evaluation, seconds.

    Returns:
        ``{expression: reason}`` for every refused expression (empty when all pass). When
        the batch fails as a whole, each expression is retried alone (with the budget
        split evenly) so the culprits are named precisely.
    """
    unique = list(dict.fromkeys(expressions))
    payload = {"expressions": unique, "samples": [{}, *samples]}
    outcome = _run(payload, timeout)
    if isinstance(outcome, dict):
        return _slow(outcome, per_evaluation)
    per = max(timeout / max(len(unique), 1), 0.5)
    reasons: dict[str, str] = {}
    for expression in unique:
        alone = _run({**payload, "expressions": [expression]}, per)
        reasons.update(_slow(alone, per_evaluation) if isinstance(alone, dict) else {expression: alone})
    return reasons


def trial_evaluate(expressions: Sequence[str], samples: Sequence[Any], *, timeout: float = TRIAL_TIMEOUT_S) -> list[str]:
    """The expressions :func:`trial_reasons` refuses, in input order."""
    reasons = trial_reasons(expressions, samples, timeout=timeout)
    return [e for e in dict.fromkeys(expressions) if e in reasons]


def _slow(seconds: dict[str, float], limit: float) -> dict[str, str]:
    return {e: f"one evaluation took {s * 1000:.0f} ms on a sample object (limit {limit * 1000:.0f} ms)"
            for e, s in seconds.items() if s > limit}


def _run(payload: dict[str, Any], timeout: float) -> dict[str, float] | str:
    """The child's per-expression slowest times, or the reason it gave none."""
    try:
        done = subprocess.run([sys.executable, "-m", "workload_map.jq.trial"], input=json.dumps(payload, default=str).encode(),
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"did not finish within {timeout:g} s on a sample object"
    try:
        answer = json.loads(done.stdout or b"null")
    except ValueError:
        answer = None
    if done.returncode != 0 or not isinstance(answer, dict):
        tail = (done.stderr or b"").decode(errors="replace").strip().splitlines()[-1:] or [""]
        return f"crashed the jq evaluator (exit code {done.returncode}{': ' + tail[0] if tail[0] else ''})"
    return {str(k): float(v) for k, v in answer.get("seconds", {}).items()}


def _child() -> None:
    from workload_map.errors import JqError
    from workload_map.jq.engine import Document, compile_program

    payload = json.loads(sys.stdin.read())
    docs = [Document(sample) for sample in payload["samples"]]
    seconds: dict[str, float] = {}
    for expression in payload["expressions"]:
        slowest = 0.0
        for doc in docs:
            started = time.perf_counter()
            try:
                compile_program(expression).all(doc)
            except JqError:
                pass
            slowest = max(slowest, time.perf_counter() - started)
        seconds[expression] = slowest
    json.dump({"seconds": seconds}, sys.stdout)


if __name__ == "__main__":
    _child()
