"""Trial evaluation of jq expressions in a separate process with a time limit.

The C jq binding cannot be interrupted, and static checks cannot prove termination
(``def f: f; f`` or ``until(false; .)`` pass them). A newly registered definition is
therefore evaluated once, in a child Python process, against sample objects: if the
child does not answer within the limit it is killed and the expressions are reported.

Protocol (stdin/stdout JSON): ``{"expressions": [...], "samples": [...]}`` in;
``{"slow": []}`` out. Runtime errors are *not* reported here (they depend on the
object); only non-termination is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any, Sequence

#: Default wall-clock budget for a whole trial, seconds.
TRIAL_TIMEOUT_S = 5.0


def trial_evaluate(expressions: Sequence[str], samples: Sequence[Any], *, timeout: float = TRIAL_TIMEOUT_S) -> list[str]:
    """Evaluate every expression on every sample in a child process.

    Args:
        expressions: jq sources (already compiled and statically checked).
        samples: JSON values to evaluate against (``{}`` is always added).
        timeout: wall-clock seconds for the whole trial.

    Returns:
        The expressions that did not finish in time (empty when all terminate). When the
        whole trial times out, each expression is retried alone with the remaining
        budget split evenly, so the slow ones are named precisely.
    """
    payload = {"expressions": list(dict.fromkeys(expressions)), "samples": [{}, *samples]}
    if _run(payload, timeout):
        return []
    per = max(timeout / max(len(payload["expressions"]), 1), 0.5)
    return [e for e in payload["expressions"] if not _run({**payload, "expressions": [e]}, per)]


def _run(payload: dict[str, Any], timeout: float) -> bool:
    try:
        subprocess.run(
            [sys.executable, "-m", "server.jq.trial"],
            input=json.dumps(payload, default=str).encode(),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    return True


def _child() -> None:
    from server.errors import JqError
    from server.jq.engine import Document, compile_program

    payload = json.loads(sys.stdin.read())
    docs = [Document(sample) for sample in payload["samples"]]
    for expression in payload["expressions"]:
        for doc in docs:
            try:
                compile_program(expression).all(doc)
            except JqError:
                pass
    json.dump({"slow": [], "at": time.time()}, sys.stdout)


if __name__ == "__main__":
    _child()
