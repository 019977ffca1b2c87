"""How ``wmap`` reports a failure: a line on stderr, or with ``-o json|yaml`` an object on stdout.

With a machine output format a script reads stdout only, so the error is written there as
``{"error": CODE, "message": ..., "hint": ...}`` (``hint`` only when there is one), in the
output's format, besides the exit code. CODE is stable (scripts may branch on it); the
exit code follows upstream ``kli`` (:mod:`workload_map.cli.main`):

=========================  ====  ==============================================
code                       exit  when
=========================  ====  ==============================================
``usage``                   2    bad arguments, unreadable input
``ambiguous_type``          2    TYPE names several group/kinds
``invalid_definition``      1    a definition failed validation
``failed``                  1    anything else
``workload_not_found``      3    no such workload
``definition_not_found``    3    ``wmap definitions NAME``: no such definition
``no_definition_for_type``  4    no definition covers TYPE (or the filters)
``cluster_unreachable``     5    the API server did not answer
=========================  ====  ==============================================
"""

from __future__ import annotations

import json
import sys
from typing import Any

from workload_map.logs import printable

MACHINE_FORMATS = ("json", "yaml")


def machine(output: Any) -> bool:
    """True for an output format scripts parse (errors then go to stdout as an object)."""
    return output in MACHINE_FORMATS


def fail(code: str, message: str, exit_code: int, *, output: Any = None, hint: str = "",
         extra: dict[str, Any] | None = None) -> int:
    """Report one failure; returns ``exit_code``.

    Args:
        code: the stable error code (module table).
        message: one line for people.
        exit_code: the process exit code.
        output: the command's ``-o`` value; ``json``/``yaml`` writes the object to stdout.
        hint: what to try next (optional).
        extra: more keys of the object (``type``, ``gvk``, ...).
    """
    if not machine(output):
        print(f"error: {printable(message)}", file=sys.stderr)
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        return exit_code
    body: dict[str, Any] = {"error": code, "message": message, **(extra or {})}
    if hint:
        body["hint"] = hint
    if output == "yaml":
        import yaml

        print(yaml.safe_dump(body, sort_keys=False), end="")
    else:
        print(json.dumps(body, indent=2))
    return exit_code
